"""Whether the compiled kernels (`format/kernels`, set up by `rmqstore.jit`) can run: `numba` imports.

Without it (a Python numba has no wheel for yet) the format layer reads records with its scalar
reference (`format/reference.py`, the oracle the kernels are tested against), far slower, and says so
once; everything else works the same.
"""

from __future__ import annotations

try:
    import numba  # noqa: F401
except ImportError:
    NUMBA = False
else:
    NUMBA = True
