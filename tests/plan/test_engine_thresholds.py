"""The planning thresholds both engines must share, so that they take the same plan: each is stated once,
in docs/contract.toml with the benchmark that measured it, and both engines use the generated constant
(docs/design.md §3.3). A hand copy in either engine, or a generated file out of step, fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from rmqstore.plan import planner
from rmqstore.store import store

ROOT = Path(__file__).parents[2]
SCALA = ROOT / "connector" / "src" / "main" / "scala" / "io" / "rmqstore" / "spark"
CONTRACT = tomllib.loads((ROOT / "docs" / "contract.toml").read_text(encoding="utf-8"))


def _scala_constant(relative: str, name: str) -> float:
    """The value of `final val <name>[: Type] = <literal>` in a Scala file (a number, `L` allowed)."""
    text = (SCALA / relative).read_text(encoding="utf-8")
    match = re.search(rf"final val {name}(?::\s*\w+)?\s*=\s*([0-9.]+)L?\s*$", text, re.M)
    assert match, f"{name} not found in {relative}"
    return float(match.group(1))


@pytest.mark.parametrize(("section", "name", "python_value", "scala_file", "scala_name"), [
    ("plan", "DENSE_SHARE", planner.DENSE_SHARE, "plan/ContractPlan.scala", "DenseShare"),
    ("store", "INDEX_TAIL_SCAN_LIMIT", store.INDEX_TAIL_SCAN_LIMIT, "store/ContractStore.scala",
     "IndexTailScanLimit"),
])
def test_the_jvm_planner_uses_the_measured_threshold(section: str, name: str, python_value: float,
                                                     scala_file: str, scala_name: str) -> None:
    spec = CONTRACT[section]["constants"][name]
    assert spec["benchmark"], f"{name}: the contract names the benchmark that measured it"
    assert python_value == spec["value"]
    assert _scala_constant(scala_file, scala_name) == spec["value"]


@pytest.mark.parametrize("scala_name", ["DenseShare", "IndexTailScanLimit"])
def test_no_engine_keeps_a_copy_of_a_threshold(scala_name: str) -> None:
    copies = [str(p.relative_to(ROOT)) for p in SCALA.rglob("*.scala")
              if not p.name.startswith("Contract")
              and re.search(rf"final val {scala_name}\b", p.read_text(encoding="utf-8"))]
    assert not copies, f"{scala_name} defined outside the generated contract: {copies}"
