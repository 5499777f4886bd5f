"""The planning thresholds both engines must share, so that they take the same plan: each is measured
and documented once, on the Python side, and the Scala constant cites it. A change to one without the
other fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rmqstore.plan import planner
from rmqstore.store import store

SCALA = Path(__file__).parents[2] / "connector" / "src" / "main" / "scala" / "io" / "rmqstore" / "spark"


def _scala_constant(relative: str, name: str) -> float:
    """The value of `final val <name>[: Type] = <literal>` in a Scala file (a number or `1L << n`)."""
    text = (SCALA / relative).read_text(encoding="utf-8")
    match = re.search(rf"final val {name}(?::\s*\w+)?\s*=\s*([0-9.]+)L?(?:\s*<<\s*(\d+))?\s*$", text, re.M)
    assert match, f"{name} not found in {relative}"
    value = float(match.group(1))
    return value * (1 << int(match.group(2))) if match.group(2) else value


@pytest.mark.parametrize(("python_value", "scala_file", "scala_name"), [
    (planner.DENSE_SHARE, "plan/ScanPlanner.scala", "DenseShare"),
    (store.INDEX_TAIL_SCAN_LIMIT, "store/Store.scala", "IndexTailScanLimit"),
])
def test_the_jvm_planner_uses_the_measured_threshold(python_value: float, scala_file: str,
                                                     scala_name: str) -> None:
    assert _scala_constant(scala_file, scala_name) == python_value
