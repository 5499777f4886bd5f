"""docs/contract.toml is the one source of what both engines share (docs/design.md §9): the generated
files are current, hold the contract's values, and no engine keeps a hand copy of a generated constant."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from rmqstore.format import contract_layout
from rmqstore.plan import contract_plan
from rmqstore.spark import contract_options
from rmqstore.store import contract_store
from rmqstore.store.cache_identity import _identity

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "docs" / "contract.toml"
CONTRACT = tomllib.loads(SOURCE.read_text(encoding="utf-8"))
VECTORS = ROOT / "tests" / "vectors" / "format_vectors.json"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("contract_generator", ROOT / ".ci" / "contract.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_files_are_current() -> None:
    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "contract.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_check_fails_on_a_stale_file_and_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    generator = _generator()
    changed = tmp_path / "contract.toml"
    changed.write_text(SOURCE.read_text(encoding="utf-8").replace("value = 0.9,", "value = 0.8,"),
                       encoding="utf-8")
    monkeypatch.setattr(generator, "SOURCE", changed)
    before = (ROOT / "python/rmqstore/plan/contract_plan.py").read_text(encoding="utf-8")
    assert generator.main(["contract.py", "--check"]) == 1
    stale = capsys.readouterr().err
    assert "python/rmqstore/plan/contract_plan.py" in stale and "plan/ContractPlan.scala" in stale
    assert "contract_layout.py" not in stale
    assert (ROOT / "python/rmqstore/plan/contract_plan.py").read_text(encoding="utf-8") == before


def test_a_new_option_is_one_entry_for_both_engines() -> None:
    generator = _generator()
    contract = tomllib.loads(SOURCE.read_text(encoding="utf-8"))
    new = {"name": "maxRecordsPerBatch", "type": "int", "minimum": 1, "default": 4096, "doc": "Rows."}
    contract["options"]["option"].append(new)
    files = {path.name: text for path, text in generator.generated(contract).items()}
    python, scala = files["contract_options.py"], files["ContractOptions.scala"]
    assert 'MAX_RECORDS_PER_BATCH = "maxRecordsPerBatch"' in python
    assert "max_records_per_batch: int = 4096" in python
    assert '"max_records_per_batch": _given(p.integer(raw, MAX_RECORDS_PER_BATCH, 1), 4096)' in python
    assert 'final val MaxRecordsPerBatch = "maxRecordsPerBatch"' in scala
    assert "maxRecordsPerBatch: Int = 4096" in scala
    assert "maxRecordsPerBatch = p.integer(raw, Name.MaxRecordsPerBatch, 1).getOrElse(4096)" in scala
    assert "final def maxRecordsPerBatch: Int = values.maxRecordsPerBatch" in scala


@pytest.mark.parametrize(("section", "module"), [
    ("layout", contract_layout), ("store", contract_store), ("plan", contract_plan)])
def test_generated_python_holds_the_contract_values(section: str, module: ModuleType) -> None:
    for name, spec in CONTRACT[section]["constants"].items():
        assert getattr(module, name) == spec["value"], name


def test_options_table_is_the_contract() -> None:
    names = [option["name"] for option in CONTRACT["options"]["option"]]
    assert list(contract_options.ALL_OPTIONS) == names
    assert set(contract_options.OPTION_DOCS) == set(names)


def test_no_engine_keeps_a_hand_copy_of_a_generated_constant() -> None:
    python_names = {name for key in ("layout", "store", "plan") for name in CONTRACT[key]["constants"]}
    generator = _generator()
    scala_names = {spec.get("scala", generator.camel(name)) for key in ("layout", "store", "plan")
                   for name, spec in CONTRACT[key]["constants"].items()}
    copies = []
    for path in (ROOT / "python" / "rmqstore").rglob("*.py"):
        if not path.name.startswith("contract_"):
            text = path.read_text(encoding="utf-8")
            copies += [f"{path.name}: {n}" for n in python_names
                       if re.search(rf"^_?{n} = [-0-9\"(]", text, re.M)]
    for path in (ROOT / "connector" / "src" / "main").rglob("*.scala"):
        if not path.name.startswith("Contract"):
            text = path.read_text(encoding="utf-8")
            copies += [f"{path.name}: {n}" for n in scala_names
                       if re.search(rf"final val {n}(?::\s*\w+)?\s*=\s*[-0-9\"]", text)]
    assert not copies, f"hand copies of docs/contract.toml constants: {copies}"


def test_cache_identity_vectors() -> None:
    vectors = json.loads(VECTORS.read_text(encoding="utf-8"))["cache_identity"]
    assert len(vectors) == 3
    for vector in vectors:
        text = _identity(vector["identity"])
        assert text == vector["json"]
        assert hashlib.sha256(text.encode()).hexdigest() + ".json" == vector["file"]
