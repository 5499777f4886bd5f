"""Primitives of the compiled kernels: unaligned big-endian loads, memcpy, bit scan and prefetch (LLVM
operations numba does not expose), and byte comparisons.

Intrinsics read a 1-D uint8 array at a byte position without bounds checks: callers check first
(`recordscan.scan_record`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from rmqstore.jit import inlined


def _loader(bits: int, big_endian: bool, signed: bool) -> Any:
    """An intrinsic reading a `bits`-wide integer at byte position `at` of a uint8 array (no
    alignment needed) as int64 (uint64 for a native-order 64-bit read)."""
    result = types.uint64 if bits == 64 and not big_endian else types.int64

    @intrinsic
    def load(typingctx: Any, arr: Any, at: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            pointer = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(bits).as_pointer())
            value = builder.load(pointer, align=1)
            if big_endian:
                value = builder.bswap(value)
            if bits < 64:
                value = (builder.sext if signed else builder.zext)(value, ir.IntType(64))
            return value

        return result(arr, at), codegen

    return load


load_word = _loader(64, False, False)
"""8 bytes in native (little-endian) order, for scanning many bytes at a time."""
load_i16 = _loader(16, True, True)
load_i32 = _loader(32, True, True)
load_u32 = _loader(32, True, False)
load_i64 = _loader(64, True, True)


@intrinsic
def memcpy(typingctx: Any, dst: Any, dst_at: Any, src: Any, src_at: Any, length: Any) -> Any:
    """dst[dst_at:dst_at+length] = src[src_at:src_at+length] with LLVM's memcpy (no view objects)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        dst_data = context.make_array(signature.args[0])(context, builder, args[0]).data
        src_data = context.make_array(signature.args[2])(context, builder, args[2]).data
        count = builder.sext(args[4], ir.IntType(64)) if args[4].type.width < 64 else args[4]
        cgutils.raw_memcpy(
            builder, builder.gep(dst_data, [args[1]]), builder.gep(src_data, [args[3]]), count, 1
        )
        return context.get_dummy_value()

    return types.void(dst, dst_at, src, src_at, length), codegen


@intrinsic
def trailing_zeros(typingctx: Any, value: Any) -> Any:
    """Number of trailing zero bits of a non-zero uint64."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(value), codegen


@intrinsic
def prefetch(typingctx: Any, arr: Any, at: Any) -> Any:
    """Hint the CPU to load the cache line of arr[at] (`llvm.prefetch`, read, high locality): never
    faults, so a position outside the array or on a page not mapped yet costs nothing but the hint."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        pointer = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        hint = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, hint, "llvm.prefetch.p0")
        builder.call(function, [pointer, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, at), codegen


LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
HIGH = np.uint64(0x8080808080808080)
BELOW_3 = np.uint64(0x7D7D7D7D7D7D7D7D)
"""(byte & 0x7F) + 0x7D sets the byte's high bit iff its low 7 bits are >= 3 (no carry between bytes)."""
MIX = np.uint64(0x9E3779B97F4A7C15)
"""The multiplier of the kernels' hashes (property-name prints, host codes)."""


@inlined
def equal(buf, at, length, word):
    """buf[at:at+length] == word."""
    if length != len(word):
        return False
    for k in range(length):  # noqa: SIM110 (a loop compiles to tight code, a generator does not)
        if buf[at + k] != word[k]:
            return False
    return True


@inlined
def same(buf, a, b, length):
    for k in range(length):  # noqa: SIM110
        if buf[a + k] != buf[b + k]:
            return False
    return True
