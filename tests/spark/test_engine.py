"""Engine choice and jar delivery (rmqstore.spark.engine / jar), without starting Spark (with Spark:
test_delivery.py)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from rmqstore.spark import compat, engine, jar


def test_jar_is_appended_to_user_jars_once() -> None:
    assert engine.with_jar(None, Path("/x/c.jar")) == "/x/c.jar"
    assert engine.with_jar("a.jar,b.jar", Path("/x/c.jar")) == "a.jar,b.jar,/x/c.jar"
    assert engine.with_jar("a.jar, /x/c.jar", Path("/x/c.jar")) == "a.jar,/x/c.jar"


def test_python_engine_needs_no_jar_and_unknown_engines_are_named() -> None:
    assert engine.engine_jar("python") is None
    with pytest.raises(ValueError, match="engine 'spark' is not one of auto, jvm, python"):
        engine.engine_jar("spark")


def test_checkout_jar_is_rebuilt_only_when_stale(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A checkout jar older than a connector source is stale: `build=False` gives None, and the
    installed copy is reused only while it is newer than every source."""
    root = tmp_path / "repo"
    source = root / "connector" / "src" / "A.scala"
    source.parent.mkdir(parents=True)
    (root / "build.sbt").write_text("")
    source.write_text("")
    four = jar.artifact("4.3.0", "2.13.16")
    built = root / "connector" / "target" / "scala-2.13" / "rmqstore-spark-4.0_2.13-0.1.0.jar"
    built.parent.mkdir(parents=True)
    built.write_bytes(b"jar")
    installed = tmp_path / "jars"
    monkeypatch.setattr(jar, "_checkout_root", lambda: root)
    monkeypatch.setattr(jar, "_package_jars_dir", lambda: installed)
    os.utime(root / "build.sbt", (2_000, 2_000))
    os.utime(source, (2_000, 2_000))
    os.utime(built, (1_000, 1_000))
    assert jar.connector_jar(build=False, wanted=four) is None
    os.utime(built, (3_000, 3_000))
    found = jar.connector_jar(build=False, wanted=four)
    assert found == installed / built.name and found.read_bytes() == b"jar"
    os.utime(source, (4_000, 4_000))
    assert jar.connector_jar(build=False, wanted=four) is None


def test_the_jar_of_the_running_spark_and_scala(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One artifact per Spark line and Scala (4.0's for every Spark 4); the Scala is that of the jars/ of
    the Spark pyspark launches; an installation ships every artifact and hands out the running one's."""
    import pyspark

    assert jar.artifact("3.5.9", "2.12.18").name == "rmqstore-spark-3.5_2.12"
    assert jar.artifact("3.5.1", "2.13.8").name == "rmqstore-spark-3.5_2.13"
    four = {jar.artifact(v, "2.13.16").name for v in ("4.0.1", "4.1.4", "4.3.0")}
    assert four == {"rmqstore-spark-4.0_2.13"}
    with pytest.raises(jar.ConnectorJarError) as unsupported:
        jar.artifact("3.4.1", "2.12.17")
    assert unsupported.value.reason == (
        "no connector jar for Spark 3.4.1 with Scala 2.12 (there are: Spark 3.5 with Scala 2.12, Spark 3.5 "
        "with Scala 2.13, Spark 4.x with Scala 2.13)")
    home = tmp_path / "spark-3.5.9-bin-hadoop3-scala2.13"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "scala-library-2.13.8.jar").write_bytes(b"")
    shipped = tmp_path / "jars"
    shipped.mkdir()
    for each in jar.ARTIFACTS:
        (shipped / f"{each.name}-0.1.0.jar").write_bytes(b"jar")
    monkeypatch.setattr(jar, "_checkout_root", lambda: None)
    monkeypatch.setattr(jar, "_package_jars_dir", lambda: shipped)
    monkeypatch.setattr(pyspark, "__version__", "3.5.9")
    monkeypatch.setenv("SPARK_HOME", str(home))
    assert jar.connector_jar() == shipped / "rmqstore-spark-3.5_2.13-0.1.0.jar"
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "no-jars"))  # pyspark 3.5's wheel default: Scala 2.12
    assert jar.connector_jar() == shipped / "rmqstore-spark-3.5_2.12-0.1.0.jar"
    monkeypatch.delenv("SPARK_HOME")
    monkeypatch.setattr(pyspark, "__version__", "4.1.4")  # pyspark's own jars/: Scala 2.13
    assert jar.connector_jar() == shipped / "rmqstore-spark-4.0_2.13-0.1.0.jar"


def test_existing_session_without_the_jar_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[str] = []

    class DataSources:
        def register(self, source: type) -> None:
            registered.append(source.name())

    class Session:
        dataSource = DataSources()
        _jvm = object()

    monkeypatch.setattr(engine, "has_connector", lambda spark: False)
    monkeypatch.setattr(engine, "_is_connect", lambda spark: False)
    monkeypatch.setattr(engine, "_warned", set())
    with pytest.warns(UserWarning, match=r"ADD JAR '/x/c.jar'"):
        engine.attach_engines(Session(), Path("/x/c.jar"), created=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.attach_engines(Session(), Path("/x/c.jar"), created=False)
    assert registered == ["rmqstore_python", "rmqstore_python"]


def test_pyspark_without_the_python_data_source_api_registers_no_python_engine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pyspark 3.5 has no `pyspark.sql.datasource`: the session gets the JVM engine only."""
    class DataSources:
        def register(self, source: type) -> None:
            raise AssertionError(f"registered {source.name()}")

    class Session:
        dataSource = DataSources()
        _jvm = object()

    assert compat.has_data_source_api()  # the pyspark the tests run on
    monkeypatch.setattr(compat.importlib.util, "find_spec",
                        lambda name: None if name == "pyspark.sql.datasource" else object())
    assert not compat.has_data_source_api()
    monkeypatch.setattr(engine, "has_connector", lambda spark: True)
    monkeypatch.setattr(engine, "_is_connect", lambda spark: False)
    engine.attach_engines(Session(), Path("/x/c.jar"), created=True)


def test_auto_falls_back_to_python_saying_why_once_and_jvm_fails(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    def unbuildable(*, build: bool = True) -> Path:
        raise jar.ConnectorJarError("long sbt output", "`.ci/sbt connector/package` failed (exit 1): boom")

    monkeypatch.setattr(engine, "connector_jar", unbuildable)
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    assert engine.engine_jar("auto") is None
    assert engine.engine_jar("auto") is None
    assert capsys.readouterr().err.splitlines() == [
        f"rmqstore: {engine.FALLBACK_NOTE}: `.ci/sbt connector/package` failed (exit 1): boom"]
    with pytest.raises(jar.ConnectorJarError, match="long sbt output"):
        engine.engine_jar("jvm")
    monkeypatch.setattr(engine, "connector_jar", lambda *, build=True: None)  # an install without the jar
    assert engine.engine_jar("auto") is None
    assert capsys.readouterr().err.splitlines() == [
        f"rmqstore: {engine.FALLBACK_NOTE}: this installation ships no connector jar"]
    with pytest.raises(jar.ConnectorJarError, match="ships no connector jar; use engine='python'"):
        engine.engine_jar("jvm")


def test_a_failed_build_names_sbts_first_error(tmp_path: Path) -> None:
    launcher = tmp_path / ".ci" / "sbt"
    launcher.parent.mkdir()
    launcher.write_text("#!/bin/sh\necho '[info] loading'\necho '[error] not found: java' >&2\n"
                        "echo '[error] x'\nexit 3\n")
    launcher.chmod(0o755)
    with pytest.raises(jar.ConnectorJarError) as failed:
        jar._build(tmp_path, jar.artifact("3.5.9", "2.12.18"))
    assert failed.value.reason == "`.ci/sbt connector35_212/package` failed (exit 3): [error] not found: java"
    assert "[info] loading" in str(failed.value)
    launcher.unlink()
    with pytest.raises(jar.ConnectorJarError) as missing:
        jar._build(tmp_path, jar.artifact("4.0.1", "2.13.16"))
    assert missing.value.reason.startswith("`.ci/sbt connector/package` could not run: [Errno 2]")
