"""Compiled (numba) kernels of the commit-log decoder, one module per concern (§2.2-§2.13): LLVM
`primitives`, one record (`recordscan`), `properties`, `crc`, the recovery `walk`, `points` (given
positions) and the decoder's `columns` pass. The scalar code of `record.py` is the reference they are
tested against.

Kernels never read outside the buffer: every record is checked by `recordscan.scan_record` before its
fields are read. Their decorators (`rmqstore.jit`) set up numba's on-disk cache at the first compile,
not at import.
"""
