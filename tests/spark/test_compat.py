"""The Python engine's pyspark gate (rmqstore.spark.compat), without starting Spark: an older pyspark
(4.0: no Filter; 4.1: no streaming datasource module, no `timezone` in to_arrow_schema) gets one line
naming the pyspark it needs, from the session and from the source's first call, never pyspark's error;
measured on real pyspark 4.0.5 / 4.1.4 in the wheel task's report."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyspark
import pyspark.sql.datasource
import pyspark.sql.pandas.types
import pytest

from rmqstore.spark import compat, engine, jar
from rmqstore.spark.errors import HIDE_TRACEBACK_ENV
from rmqstore.spark.source import RmqStoreDataSource


def _as_pyspark_41(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark.sql.streaming.datasource", None)  # import fails


def _as_pyspark_40(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(pyspark.sql.datasource, "Filter")


def _without_timezone(monkeypatch: pytest.MonkeyPatch) -> None:
    def to_arrow_schema(schema, error_on_duplicated_field_names_in_struct=False, timestamp_utc=True,
                        prefers_large_types=False):
        raise AssertionError("not called")

    monkeypatch.setattr(pyspark.sql.pandas.types, "to_arrow_schema", to_arrow_schema)


def test_this_pyspark_runs_the_python_engine() -> None:
    assert compat.missing_api() is None
    compat.require_python_engine()


@pytest.mark.parametrize(("older", "missing"), [
    (_as_pyspark_40, "pyspark.sql.datasource.Filter"),
    (_as_pyspark_41, "pyspark.sql.streaming.datasource"),
    (_without_timezone, "to_arrow_schema(timezone=...)"),
])
def test_an_older_pyspark_gets_one_line_naming_the_pyspark_needed(monkeypatch: pytest.MonkeyPatch,
                                                                   older, missing: str) -> None:
    older(monkeypatch)
    assert compat.missing_api() == missing
    with pytest.raises(compat.PysparkTooOldError) as error:
        compat.require_python_engine()
    message = str(error.value)
    assert message.startswith(f"rmqstore: the Python engine needs pyspark {compat.PYTHON_ENGINE_PYSPARK} "
                              f"or newer (this is pyspark {pyspark.__version__}, without {missing}); ")
    assert "\n" not in message and "use the JVM engine" in message


def test_the_session_and_every_source_entry_check_the_gate(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """engine='python' and the fallback of 'auto' fail before Spark starts; 'jvm' with a jar is
    unaffected; schema() (load), reader() (a schema given by the user) and streamReader() fail with
    the same line before importing readers that need the newer API."""
    _as_pyspark_41(monkeypatch)
    with pytest.raises(compat.PysparkTooOldError):
        engine.engine_jar("python")

    def no_jar(*, build: bool = True) -> Path:
        raise jar.ConnectorJarError("no jar", "no jar")

    monkeypatch.setattr(engine, "connector_jar", no_jar)
    with pytest.raises(compat.PysparkTooOldError):
        engine.engine_jar("auto")
    monkeypatch.setattr(engine, "connector_jar", lambda *, build=True: tmp_path / "c.jar")
    assert engine.engine_jar("jvm") == engine.engine_jar("auto") == tmp_path / "c.jar"
    source = RmqStoreDataSource({"path": str(tmp_path / "no-store")})
    for call in (source.schema, lambda: source.reader(None), lambda: source.streamReader(None)):
        with pytest.raises(compat.PysparkTooOldError, match=r"needs pyspark 4\.2 or newer"):
            call()


def test_the_line_goes_without_traceback_from_older_pysparks_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before pyspark 4.2 the planning workers' `main` reports the error and exits (no `worker_run`):
    there too the variable that drops Spark's traceback is set, in that worker only."""
    _as_pyspark_40(monkeypatch)
    monkeypatch.setenv(HIDE_TRACEBACK_ENV, "")  # restored (to unset) after the test
    monkeypatch.delenv(HIDE_TRACEBACK_ENV)
    source = RmqStoreDataSource({"path": "/nowhere"})
    with pytest.raises(compat.PysparkTooOldError):
        source.schema()
    assert HIDE_TRACEBACK_ENV not in os.environ  # not in a Spark worker
    worker = os.path.join("site-packages", "pyspark", "sql", "worker", "create_data_source.py")
    runner = compile("def main(source):\n    source.schema()\n", worker, "exec")
    namespace: dict[str, object] = {}
    exec(runner, namespace)
    with pytest.raises(compat.PysparkTooOldError):
        namespace["main"](source)
    assert os.environ[HIDE_TRACEBACK_ENV] == "1"
