"""The JVM connector's jar for the running Spark: shipped in the package, or built from a source checkout.

One artifact per Spark line and Scala version (README "For JVM users"): `rmqstore-spark-3.5_2.12`,
`rmqstore-spark-3.5_2.13` and `rmqstore-spark-4.0_2.13` (which serves Spark 4.0 to 4.3). The wheel carries
their jars, `rmqstore/jars/rmqstore-spark-*.jar`, put there by the release build's hook
(`python/rmqstore_build.py`, which takes `release_jars`); `connector_jar()` takes the one of the Spark and
Scala pyspark starts. In a checkout that jar is built with the project's sbt launcher (`.ci/sbt
<project>/package`, build.sbt `connectorLine`) when it is missing or older than any connector source or build
file, and copied into `python/rmqstore/jars/` (never committed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

JAR_GLOB = "rmqstore-spark-*.jar"
PROVIDER_CLASS = "io.rmqstore.spark.RmqStoreProvider"
"""The connector's TableProvider: `format(PROVIDER_CLASS)` selects the JVM engine whatever short
names are registered."""


class ConnectorJarError(RuntimeError):
    """The connector jar is neither shipped nor buildable here; `reason` says why in one line."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Artifact:
    """A connector artifact, `rmqstore-spark-<line>_<scala>`, and in a checkout the sbt project that builds it
    with the directory its jar is written to (build.sbt `connectorLine`)."""

    line: str
    scala: str
    project: str
    target: str

    @property
    def name(self) -> str:
        return f"rmqstore-spark-{self.line}_{self.scala}"

    @property
    def glob(self) -> str:
        return f"{self.name}-*.jar"


ARTIFACTS: tuple[Artifact, ...] = (
    Artifact("3.5", "2.12", "connector35_212", "connector/target/spark-3.5_2.12/scala-2.12"),
    Artifact("3.5", "2.13", "connector35_213", "connector/target/spark-3.5_2.13/scala-2.13"),
    Artifact("4.0", "2.13", "connector", "connector/target/scala-2.13"),
)
"""Every artifact build.sbt makes; the 4.0 line's serves every Spark 4."""

DEFAULT_SCALA = {"3": "2.12", "4": "2.13"}
"""The Scala of a Spark major version's default build (pyspark's wheels), when its jars do not say."""


def artifact(spark_version: str, scala_version: str) -> Artifact:
    """The artifact for Spark `spark_version` (e.g. "3.5.9") built for Scala `scala_version` ("2.12.18");
    ConnectorJarError naming the supported pairs when there is none."""
    major, minor = ([*spark_version.split("."), "", ""])[:2]
    line = "4.0" if major == "4" else f"{major}.{minor}"
    scala = ".".join(scala_version.split(".")[:2])
    found = next((a for a in ARTIFACTS if (a.line, a.scala) == (line, scala)), None)
    if found is None:
        supported = ", ".join(f"Spark {'4.x' if a.line == '4.0' else a.line} with Scala {a.scala}"
                              for a in ARTIFACTS)
        reason = f"no connector jar for Spark {spark_version} with Scala {scala} (there are: {supported})"
        raise ConnectorJarError(f"rmqstore: {reason}", reason)
    return found


def running_artifact() -> Artifact:
    """The artifact of the Spark pyspark starts: pyspark's version, and the Scala of that Spark's jars/
    (`$SPARK_HOME/jars` when set, as pyspark then launches that Spark; else pyspark's own)."""
    import pyspark

    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    libraries = sorted((home / "jars").glob("scala-library-*.jar"))
    scala = (libraries[0].name[len("scala-library-"):-len(".jar")] if libraries
             else DEFAULT_SCALA.get(pyspark.__version__.split(".")[0], ""))
    return artifact(pyspark.__version__, scala)


def _package_jars_dir() -> Path:
    return Path(str(resources.files("rmqstore") / "jars"))


def _checkout_root() -> Path | None:
    """The repository root when rmqstore runs from a source checkout (python/rmqstore/...)."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "build.sbt").is_file() and (root / "connector").is_dir() else None


def _jar_in(directory: Path, wanted: Artifact) -> Path | None:
    """`wanted`'s jar in `directory` (the last by name when several versions are there), None when none is."""
    jars = sorted(directory.glob(wanted.glob))
    return jars[-1] if jars else None


def _shipped_jar(wanted: Artifact) -> Path | None:
    return _jar_in(_package_jars_dir(), wanted)


def _newest_source_mtime(root: Path) -> float:
    """Newest modification time of what the jar is built from (connector/src, build files)."""
    inputs = [root / "build.sbt", root / "project" / "build.properties", root / "project" / "plugins.sbt"]
    inputs += [p for p in (root / "connector").rglob("*") if p.is_file() and "target" not in p.parts]
    return max((p.stat().st_mtime for p in inputs if p.is_file()), default=0.0)


def connector_jar(*, build: bool = True, wanted: Artifact | None = None) -> Path | None:
    """The path of the connector jar for `wanted` (default: the running Spark's, `running_artifact`).

    Shipped jar (installed package): returned as is. In a checkout: rebuilt with `.ci/sbt
    <project>/package` when missing or stale (only with `build`), copied into the package's jars
    directory. Returns None when no jar exists and `build` is false; raises ConnectorJarError when a
    build was needed and failed, or when no artifact fits the running Spark.
    """
    wanted = wanted or running_artifact()
    root = _checkout_root()
    jar = _shipped_jar(wanted)
    if root is None:
        return jar
    newest = _newest_source_mtime(root)
    if _fresh(jar, newest):
        return jar
    built = _target_jar(root, wanted)
    if _fresh(built, newest):
        return _install(built, wanted)
    if not build:
        return None
    return _build(root, wanted)


def release_jars(root: Path) -> list[Path]:
    """Every artifact's jar of the checkout `root`'s sbt build (the wheel carries them all), building in one
    sbt run those missing or older than a source (so a build that just packaged them is not repeated)."""
    newest = _newest_source_mtime(root)
    stale = [a for a in ARTIFACTS if not _fresh(_target_jar(root, a), newest)]
    if stale:
        _run_sbt(root, stale)
    return [jar for a in ARTIFACTS if (jar := _target_jar(root, a)) is not None]


def _fresh(jar: Path | None, newest: float) -> bool:
    return jar is not None and jar.stat().st_mtime >= newest


def _target_jar(root: Path, wanted: Artifact) -> Path | None:
    return _jar_in(root / wanted.target, wanted)


def _build(root: Path, wanted: Artifact) -> Path:
    """Build `wanted`'s jar and install it into the package's jars directory."""
    return _install(_run_sbt(root, [wanted])[0], wanted)


def _run_sbt(root: Path, artifacts: list[Artifact]) -> list[Path]:
    """Build the artifacts' jars with the checkout's sbt launcher, saying so on stderr first: on a fresh
    machine sbt, Scala and Spark come from Maven Central, which takes minutes of otherwise silence."""
    command = [str(root / ".ci" / "sbt"), *(f"{a.project}/package" for a in artifacts)]
    shown = f"`.ci/sbt {' '.join(command[1:])}`"
    print(f"rmqstore: building the JVM connector with {shown} (once; about 30 s, a few minutes on a fresh "
          "machine) ...", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        result = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, check=False)
    except OSError as exc:  # no launcher script, or no shell to run it
        raise ConnectorJarError(f"rmqstore: building the JVM connector with {shown} failed: {exc}",
                                f"{shown} could not run: {exc}") from exc
    built = [_target_jar(root, a) for a in artifacts]
    if result.returncode != 0 or None in built:
        lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("[error]")]
        cause = errors[0] if errors else lines[-1] if lines else "no output"  # sbt's first error
        raise ConnectorJarError(f"rmqstore: building the JVM connector with {shown} failed "
                                f"(exit {result.returncode}):\n" + "\n".join(lines[-20:]),
                                f"{shown} failed (exit {result.returncode}): {cause}")
    names = ", ".join(jar.name for jar in built)
    print(f"rmqstore: built {names} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return built


def _install(built: Path, wanted: Artifact) -> Path:
    """Copy a freshly built jar into the package's jars directory (replacing older ones of its artifact)."""
    target_dir = _package_jars_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    for old in target_dir.glob(wanted.glob):
        old.unlink()
    target = target_dir / built.name
    shutil.copy2(built, target)
    return target
