"""The numba set-up (`rmqstore.jit`, design §8.1): nothing on disk at import, the cache directory made
at the first compile, and cached kernels that follow changes of their package's other modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import rmqstore

PYTHONPATH = str(Path(rmqstore.__file__).parents[1])

IMPORT_FORMAT_THEN_COMPILE = """
import importlib, os, pkgutil, sys
import numpy as np
import rmqstore.format
for module in pkgutil.walk_packages(rmqstore.format.__path__, "rmqstore.format."):
    importlib.import_module(module.name)
import numba
print(os.environ.get("NUMBA_CACHE_DIR"), repr(numba.config.CACHE_DIR), sorted(os.listdir(sys.argv[1])))
from rmqstore.format.kernels.crc import crc32
assert crc32(np.frombuffer(b"abc", dtype=np.uint8), 0, 3) == 0x352441C2
print(os.environ["NUMBA_CACHE_DIR"])
"""


def _environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without any cache location, the temp directory in tmp_path/tmp."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "RMQSTORE_CACHE_DIR", "PYTHONPATH")}
    (tmp_path / "tmp").mkdir()
    return {**env, "TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": PYTHONPATH, **extra}


def _run(script: str, env: dict[str, str], *args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n")


def test_importing_the_format_layer_touches_no_file_system(tmp_path: Path) -> None:
    """Every rmqstore.format module imported: no directory made, NUMBA_CACHE_DIR unset; the first
    compile makes numba/ under the cache root and points NUMBA_CACHE_DIR there."""
    env = _environ(tmp_path, RMQSTORE_CACHE_DIR=str(tmp_path / "cache"), HOME=str(tmp_path / "home"))
    at_import, after_compile, _ = _run(IMPORT_FORMAT_THEN_COMPILE, env, str(tmp_path))
    assert at_import == "None '' ['tmp']"
    assert after_compile == str(tmp_path / "cache" / "numba")
    assert list((tmp_path / "cache" / "numba").glob("*/crc.crc32-*.nbi"))
    assert not (tmp_path / "home").exists() and not list((tmp_path / "tmp").iterdir())


def test_kernel_cache_falls_back_when_home_is_not_writable(tmp_path: Path) -> None:
    """Without NUMBA_CACHE_DIR and with an unusable home, compiled kernels are cached in the temp dir."""
    env = _environ(tmp_path, HOME="/proc/self/no-home")
    script = "import os, rmqstore.jit; rmqstore.jit.kernel_cache_dir(); print(os.environ['NUMBA_CACHE_DIR'])"
    assert _run(script, env)[0] == str(tmp_path / "tmp" / "rmqstore-numba")


CALLER = "from kernels_pkg.caller import twice; print(twice(1), sum(twice.stats.cache_hits.values()))"

CALLEE = "from rmqstore.jit import inlined\n\n@inlined\ndef one(x):\n    return {value}\n"


def test_a_cached_kernel_follows_a_change_of_a_sibling_module(tmp_path: Path) -> None:
    """numba stamps cached code with its function's own file; rmqstore's kernels call kernels of
    sibling modules, so a change there must not run stale cached code."""
    package = tmp_path / "src" / "kernels_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "callee.py").write_text(CALLEE.format(value="x"))
    (package / "caller.py").write_text("from kernels_pkg.callee import one\n"
                                       "from rmqstore.jit import compiled\n\n"
                                       "@compiled\ndef twice(x):\n    return 2 * one(x)\n")
    env = _environ(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
                   PYTHONPATH=f"{PYTHONPATH}{os.pathsep}{tmp_path / 'src'}")
    assert _run(CALLER, env)[0] == "2 0"
    assert _run(CALLER, env)[0] == "2 1"  # loaded from the cache
    (package / "callee.py").write_text(CALLEE.format(value="x + 1"))
    assert _run(CALLER, env)[0] == "4 0"
