"""The release build's setuptools hook (pyproject.toml `[tool.setuptools.cmdclass]`); not installed.

- build_py puts every connector jar of the sbt build into the wheel's `rmqstore/jars/`, taken from
  `rmqstore.spark.jar.release_jars` (one per Spark line; sbt builds those older than their sources). Editable
  installs get none: there the package builds its jar when a session first needs it.
- sdist adds what that rebuild needs: the connector's sources, the sbt build and its launcher.

jar.py is loaded from its file: it needs only the standard library, and importing the `rmqstore`
package would need its runtime dependencies, which the build environment does not have.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent.parent
JAR_MODULE = ROOT / "python" / "rmqstore" / "spark" / "jar.py"
SDIST_TREES = ("connector/src",)
SDIST_FILES = ("build.sbt", "project/build.properties", "project/plugins.sbt", ".ci/sbt", "docs/format.md",
               "python/rmqstore_build.py")
"""Besides the package and license files: the connector's sources and the sbt build that rebuilds
its jar from the sdist (the build's other projects are absent there and stay empty)."""


def _jar_module():
    """jar.py as a module of its own; registered in sys.modules first, as its dataclasses need."""
    spec = importlib.util.spec_from_file_location("_rmqstore_jar", JAR_MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class BuildPyWithJars(build_py):
    """build_py that also copies the connector jars into the built package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "rmqstore" / "jars"
        target.mkdir(parents=True, exist_ok=True)
        for jar in _jar_module().release_jars(ROOT):
            shutil.copy2(jar, target / jar.name)


class SdistWithConnector(sdist):
    """sdist that also carries the connector's sources and the sbt build (added to the release tree:
    setuptools makes the sdist's file list with the base class's defaults)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        extra = [str(p.relative_to(ROOT)) for tree in SDIST_TREES for p in sorted((ROOT / tree).rglob("*"))
                 if p.is_file() and "target" not in p.relative_to(ROOT).parts]
        for name in [*extra, *SDIST_FILES]:
            self.mkpath(str(Path(base_dir, name).parent))
            self.copy_file(str(ROOT / name), str(Path(base_dir, name)))
