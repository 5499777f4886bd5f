"""The release build (python/rmqstore_build.py, pyproject's cmdclass): which jars the wheel takes and
what the sdist must carry to rebuild them. CI builds and installs the real wheel (.ci/run)."""

from __future__ import annotations

import importlib.util
import os
import tomllib
from pathlib import Path

import pytest

from rmqstore.spark import jar

ROOT = Path(__file__).resolve().parent.parent


def _hook():
    spec = importlib.util.spec_from_file_location("rmqstore_build", ROOT / "python" / "rmqstore_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "connector" / "src").mkdir(parents=True)
    (root / "connector" / "src" / "A.scala").write_text("")
    (root / "build.sbt").write_text("")
    for path in (root / "build.sbt", root / "connector" / "src" / "A.scala"):
        os.utime(path, (2_000, 2_000))
    return root


def _fake_sbt(root: Path, jars: list[Path]) -> None:
    """A launcher that 'builds' the given jars."""
    launcher = root / ".ci" / "sbt"
    launcher.parent.mkdir()
    launcher.write_text("#!/bin/sh\n" + "".join(f"mkdir -p {j.parent} && echo built > {j}\n" for j in jars))
    launcher.chmod(0o755)


def _jar(root: Path, artifact: jar.Artifact) -> Path:
    return root / artifact.target / f"{artifact.name}-0.1.0.jar"


def test_the_wheel_takes_every_fresh_jar_of_the_build_without_running_sbt(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    jars = [_jar(root, artifact) for artifact in jar.ARTIFACTS]
    for built in jars:
        built.parent.mkdir(parents=True)
        built.write_text("old")
        os.utime(built, (3_000, 3_000))
    assert jar.release_jars(root) == jars  # no .ci/sbt here: running it would raise


def test_stale_jars_are_rebuilt_by_the_projects_sbt_build(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = _checkout(tmp_path)
    fresh, stale = _jar(root, jar.ARTIFACTS[0]), _jar(root, jar.ARTIFACTS[-1])
    for built, mtime in ((fresh, 3_000), (stale, 1_000)):
        built.parent.mkdir(parents=True)
        built.write_text("old")
        os.utime(built, (mtime, mtime))
    missing = [_jar(root, artifact) for artifact in jar.ARTIFACTS[1:-1]]
    _fake_sbt(root, [*missing, stale])
    assert jar.release_jars(root) == [fresh, *missing, stale]
    assert fresh.read_text() == "old" and stale.read_text() == "built\n"
    assert all(built.read_text() == "built\n" for built in missing)
    assert f"rmqstore: built {', '.join(j.name for j in [*missing, stale])} in " in capsys.readouterr().err


def test_the_build_hook_is_wired_and_the_sdist_carries_what_rebuilds_the_jar() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    hook = _hook()
    for command, target in project["tool"]["setuptools"]["cmdclass"].items():
        module, _, name = target.rpartition(".")
        assert module == "rmqstore_build" and getattr(hook, name).__name__ == name, command
    assert project["project"]["license-files"] == ["LICENSE", "NOTICE"]
    assert "pyspark" not in " ".join(project["project"]["dependencies"])
    for name in [*hook.SDIST_FILES, *hook.SDIST_TREES, *project["project"]["license-files"]]:
        assert (ROOT / name).exists(), name
    assert Path(jar.__file__).resolve() == hook.JAR_MODULE
    loaded = hook._jar_module()  # as the hook loads it, outside the package
    assert [a.name for a in loaded.ARTIFACTS] == [a.name for a in jar.ARTIFACTS]
