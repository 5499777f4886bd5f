"""The numba set-up of rmqstore's compiled kernels: their decorators, and where their machine code is
cached on disk (design §8.1).

Nothing happens at import: the cache directory is chosen, created and handed to numba when the first
kernel is compiled (`kernel_cache_dir`), so the format layer, whose kernels these decorators make,
touches no file system when it is imported (design §1).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache, UserProvidedCacheLocator
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher

from rmqstore.cachedir import cache_root

CACHE_ENV = "NUMBA_CACHE_DIR"


@functools.cache
def kernel_cache_dir() -> str | None:
    """Where compiled kernels are cached, chosen and created on the first call: `$NUMBA_CACHE_DIR`, else
    `numba/` under `cache_root()`, else `rmqstore-numba` in the temp directory (the package directory
    may be read-only: site-packages, a Spark executor's archive). Sets `NUMBA_CACHE_DIR` (child
    processes share it) and numba's configuration; None when no candidate is writable (kernels then
    compile in every process)."""
    chosen = os.environ.get(CACHE_ENV)
    if not chosen:
        for candidate in (cache_root() / "numba", Path(tempfile.gettempdir()) / "rmqstore-numba"):
            try:
                candidate.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue
            if os.access(candidate, os.W_OK | os.X_OK):
                chosen = str(candidate)
                break
        else:
            return None
    os.environ[CACHE_ENV] = chosen
    numba.config.CACHE_DIR = chosen  # numba read its configuration when it was imported
    return chosen


@functools.cache
def _package_stamp(directory: str, stats: tuple[tuple[str, float, int], ...]) -> bytes:
    digest = hashlib.sha256()
    for name, _, _ in stats:
        digest.update(Path(directory, name).read_bytes())
    return digest.digest()


class _PackageLocator(UserProvidedCacheLocator):
    """numba's locator for `$NUMBA_CACHE_DIR`, stamping a kernel's cached code with the sources of
    every module of its package, not only its own: kernels inline and call kernels of sibling modules,
    whose changes numba's stamp (the function's own file) would miss."""

    def get_source_stamp(self) -> bytes:
        directory = Path(self._py_file).parent
        stats = tuple((p.name, p.stat().st_mtime, p.stat().st_size) for p in sorted(directory.glob("*.py")))
        return _package_stamp(str(directory), stats)


class _CacheImpl(CompileResultCacheImpl):
    _locator_classes: ClassVar[list[type]] = [_PackageLocator, *CompileResultCacheImpl._locator_classes]


class _FunctionCache(FunctionCache):
    _impl_class = _CacheImpl


class _Kernel(CPUDispatcher):
    """A nopython dispatcher that turns its on-disk cache on at its first compile (numba's `cache=True`
    would choose and create the directory when the function is decorated)."""

    _cache_set_up = False

    def compile(self, sig: Any) -> Any:
        if not self._cache_set_up:
            with global_compiler_lock:
                if not self._cache_set_up and kernel_cache_dir() is not None:
                    self._cache = _FunctionCache(self.py_func)
                self._cache_set_up = True
        return super().compile(sig)


def _decorator(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    targetoptions = {"nopython": True, "nogil": True, "boundscheck": None, **options}
    return lambda func: _Kernel(func, {}, dict(targetoptions))


compiled = _decorator()
"""The decorator of every compiled function (`numba.njit(cache=True, nogil=True)`, cached lazily)."""
inlined = _decorator(inline="always")
"""For small helpers on hot paths: inlined into the caller at numba IR level (LLVM does not inline
across numba's per-function modules reliably, and a call passes every array as ~7 arguments)."""
