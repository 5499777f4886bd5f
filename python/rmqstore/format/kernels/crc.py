"""BODYCRC (§2.7) in compiled code: zlib's CRC-32 by ISA-L when python-isal exports it
(`NATIVE_CRC32`), else by a slicing-by-8 table kernel; `zlib.crc32` is the reference they are
tested against.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from rmqstore.format.kernels.primitives import load_i32
from rmqstore.format.kernels.recordscan import RECORD, scan_record
from rmqstore.jit import compiled, inlined


def _crc32_tables() -> np.ndarray:
    """Slicing-by-8 tables of the reflected CRC-32 (polynomial 0xEDB88320, zlib's CRC)."""
    tables = np.zeros((8, 256), dtype=np.uint32)
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
        tables[0, byte] = crc
    for k in range(1, 8):
        tables[k] = (tables[k - 1] >> 8) ^ tables[0][tables[k - 1] & 0xFF]
    return tables


_CRC32_TABLES = _crc32_tables()


def _native_crc32() -> int:
    """Address of ISA-L's `crc32_gzip_refl(crc, data, length)` (zlib's CRC-32 by carry-less
    multiplication, some 5x the table kernel), exported by python-isal's extension module; 0 when
    python-isal is missing or does not export it.

    Compiled code takes the address as an argument (`crc32`'s `native`), never as a global: a global
    would be frozen into the on-disk cache, and the library loads at another address in each process.
    """
    try:
        from isal import isal_zlib

        function = ctypes.CDLL(isal_zlib.__file__).crc32_gzip_refl
    except (ImportError, OSError, AttributeError):
        return 0
    return ctypes.cast(function, ctypes.c_void_p).value or 0


NATIVE_CRC32 = _native_crc32()
"""Pass as `native` to the CRC kernels (0: the table kernel)."""


@intrinsic
def _call_crc32(typingctx: Any, address: Any, buf: Any, at: Any, length: Any) -> Any:
    """The function at `address` (`_native_crc32`) on buf[at:at + length], from CRC 0."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i32, i64 = ir.IntType(32), ir.IntType(64)
        function_type = ir.FunctionType(i32, [i32, ir.IntType(8).as_pointer(), i64])
        function = builder.inttoptr(args[0], function_type.as_pointer())
        data = context.make_array(signature.args[1])(context, builder, args[1]).data
        crc = builder.call(function, [ir.Constant(i32, 0), builder.gep(data, [args[2]]), args[3]])
        return builder.zext(crc, i64)

    return types.int64(types.int64, buf, types.int64, types.int64), codegen


@compiled
def crc32(buf, at, length, native=0):
    """zlib's CRC-32 of buf[at:at + length]: by the function at address `native` (`NATIVE_CRC32`)
    when not 0, else slicing-by-8 (eight bytes per step)."""
    if native != 0:
        return np.uint32(_call_crc32(np.int64(native), buf, np.int64(at), np.int64(length)))
    t = _CRC32_TABLES
    crc = np.uint32(0xFFFFFFFF)
    i = at
    end = at + length
    while i + 8 <= end:
        lo = crc ^ (np.uint32(buf[i]) | (np.uint32(buf[i + 1]) << 8) | (np.uint32(buf[i + 2]) << 16)
                    | (np.uint32(buf[i + 3]) << 24))
        crc = (t[7, lo & 0xFF] ^ t[6, (lo >> 8) & 0xFF] ^ t[5, (lo >> 16) & 0xFF] ^ t[4, lo >> 24]
               ^ t[3, buf[i + 4]] ^ t[2, buf[i + 5]] ^ t[1, buf[i + 6]] ^ t[0, buf[i + 7]])
        i += 8
    while i < end:
        crc = (crc >> 8) ^ t[0, (crc ^ buf[i]) & 0xFF]
        i += 1
    return crc ^ np.uint32(0xFFFFFFFF)


@compiled
def crc_mismatches(buf, starts, native=0):
    """Per record: True when its BODYCRC is not its body's CRC-32 masked to 31 bits (§2.7; records
    already checked with `scan_record`, empty bodies not compared); `native` as in `crc32`."""
    bad = np.zeros(len(starts), dtype=np.bool_)
    for i in range(len(starts)):
        kind, _, _, body_at, body_len, _, _, _, _ = scan_record(buf, starts[i])
        if kind == RECORD:
            bad[i] = crc_mismatch(buf, starts[i], body_at, body_len, native)
    return bad


@inlined
def crc_mismatch(buf, pos, body_at, body_len, native=0):
    """The record at pos has a non-empty body whose CRC-32 masked to 31 bits is not its BODYCRC (§2.7)."""
    crc = np.int64(crc32(buf, body_at, body_len, native) & 0x7FFFFFFF) if body_len > 0 else 0
    return body_len > 0 and crc != load_i32(buf, pos + 8)
