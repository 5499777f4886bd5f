"""The JVM connector's jar: shipped in the package, or built from a source checkout.

The wheel carries `rmqstore/jars/rmqstore-connector*.jar`, put there by the release build's hook
(`python/rmqstore_build.py`, which takes `release_jars`). In a checkout the jar is built with the
project's sbt launcher (`.ci/sbt connector/package`) when it is missing or older than any connector
source or build file, and copied into `python/rmqstore/jars/` (never committed).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

JAR_GLOB = "rmqstore-connector*.jar"
PROVIDER_CLASS = "io.rmqstore.spark.RmqStoreProvider"
"""The connector's TableProvider: `format(PROVIDER_CLASS)` selects the JVM engine whatever short
names are registered."""


class ConnectorJarError(RuntimeError):
    """The connector jar is neither shipped nor buildable here; `reason` says why in one line."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _package_jars_dir() -> Path:
    return Path(str(resources.files("rmqstore") / "jars"))


def _checkout_root() -> Path | None:
    """The repository root when rmqstore runs from a source checkout (python/rmqstore/...)."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "build.sbt").is_file() and (root / "connector").is_dir() else None


def _shipped_jar() -> Path | None:
    jars = sorted(_package_jars_dir().glob(JAR_GLOB)) if _package_jars_dir().is_dir() else []
    return jars[-1] if jars else None


def _newest_source_mtime(root: Path) -> float:
    """Newest modification time of what the jar is built from (connector/src, build files)."""
    inputs = [root / "build.sbt", root / "project" / "build.properties", root / "project" / "plugins.sbt"]
    inputs += [p for p in (root / "connector").rglob("*") if p.is_file() and "target" not in p.parts]
    return max((p.stat().st_mtime for p in inputs if p.is_file()), default=0.0)


def connector_jar(*, build: bool = True) -> Path | None:
    """The connector jar's path.

    Shipped jar (installed package): returned as is. In a checkout: rebuilt with `.ci/sbt
    connector/package` when missing or stale (only with `build`), copied into the package's jars
    directory. Returns None when no jar exists and `build` is false; raises ConnectorJarError when a
    build was needed and failed.
    """
    root = _checkout_root()
    jar = _shipped_jar()
    if root is None:
        return jar
    newest = _newest_source_mtime(root)
    if jar is not None and jar.stat().st_mtime >= newest:
        return jar
    built = _target_jars(root, newest)
    if built:
        return _install(built[-1])
    if not build:
        return None
    return _build(root)


def release_jars(root: Path) -> list[Path]:
    """Every connector jar of the checkout `root`'s sbt build, rebuilt first unless all are newer than
    every source (so a build that just ran `connector/package` is not repeated)."""
    return _target_jars(root, _newest_source_mtime(root)) or _run_sbt(root)


def _target_jars(root: Path, newest: float = 0.0) -> list[Path]:
    """The jars `connector/package` left under connector/target (one per Scala line), those at least
    as new as `newest` (a source's modification time: the fresh ones)."""
    jars = sorted((root / "connector" / "target").glob(f"scala-*/{JAR_GLOB}"))
    return [jar for jar in jars if jar.stat().st_mtime >= newest]


def _build(root: Path) -> Path:
    """Build the jar and install it into the package's jars directory."""
    return _install(_run_sbt(root)[-1])


def _run_sbt(root: Path) -> list[Path]:
    """Build the jars with the checkout's sbt launcher, saying so on stderr first: on a fresh machine
    sbt, Scala and Spark are downloaded from Maven Central, which takes minutes of otherwise silence."""
    command = [str(root / ".ci" / "sbt"), "connector/package"]
    shown = f"`.ci/sbt {command[1]}`"
    print(f"rmqstore: building the JVM connector with {shown} (once; about 30 s, a few minutes on a fresh "
          "machine) ...", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        result = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, check=False)
    except OSError as exc:  # no launcher script, or no shell to run it
        raise ConnectorJarError(f"rmqstore: building the JVM connector with {shown} failed: {exc}",
                                f"{shown} could not run: {exc}") from exc
    built = _target_jars(root)
    if result.returncode != 0 or not built:
        lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("[error]")]
        cause = errors[0] if errors else lines[-1] if lines else "no output"  # sbt's first error
        raise ConnectorJarError(f"rmqstore: building the JVM connector with {shown} failed "
                                f"(exit {result.returncode}):\n" + "\n".join(lines[-20:]),
                                f"{shown} failed (exit {result.returncode}): {cause}")
    names = ", ".join(jar.name for jar in built)
    print(f"rmqstore: built {names} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return built


def _install(built: Path) -> Path:
    """Copy a freshly built jar into the package's jars directory (replacing older ones)."""
    target_dir = _package_jars_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    for old in target_dir.glob(JAR_GLOB):
        old.unlink()
    target = target_dir / built.name
    shutil.copy2(built, target)
    return target
