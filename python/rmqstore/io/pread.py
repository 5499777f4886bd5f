"""Many file ranges read by one compiled loop of libc's `pread` (`LocalFile.read_ranges`, design §4.5)."""

from __future__ import annotations

from numba import types

from rmqstore.jit import compiled

_pread = types.ExternalFunction("pread", types.int64(types.int32, types.voidptr, types.uint64, types.int64))
"""libc's pread(fd, buffer, count, offset), called by name from compiled code."""


@compiled
def pread_ranges(fd, offsets, lengths, out):
    """Read file range i (offsets[i], lengths[i]) into out, back to back; returns the bytes read, or
    -1 - i when range i came short (a read error or the end of the file)."""
    at = 0
    for i in range(len(offsets)):
        offset = offsets[i]
        left = lengths[i]
        while left > 0:
            got = _pread(fd, out[at:].ctypes.data, left, offset)
            if got <= 0:
                return -1 - i
            at += got
            offset += got
            left -= got
    return at
