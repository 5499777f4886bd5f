"""Decode throughput: walk_records + decode_records against a plain per-record struct decoder.

Run: python3 -m pytest tests/bench/test_bench_decode.py -m bench -s
Single-threaded (Arrow limited to one CPU); rates use process CPU time, so other load on the
machine distorts them less than wall time. RMQSTORE_BENCH_RECORDS sets the record count. The first
decode call compiles the numba kernels (or loads them from the on-disk cache); its wall time is
reported separately and kept out of the rates.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import time
import zlib
from collections.abc import Callable
from typing import Any

import lz4.frame
import numpy as np
import pyarrow as pa
import pytest
import zstandard

from rmqstore.format.columnar import decode_records, walk_records
from rmqstore.format.layout import BLANK_MAGIC, MAGIC_V2
from rmqstore.format.record import encode_blank, encode_record
from rmqstore.format.table import COLUMN_NAMES

RECORDS = int(os.environ.get("RMQSTORE_BENCH_RECORDS", "500000"))
BODY_SIZE = 256
BASE = 1 << 30
PROJECTION = ["commitLogOffset", "storeTimestamp", "key"]


def build_segment(records: int) -> np.ndarray:
    """`records` messages with 256-byte bodies and KEYS/TAGS/UNIQ_KEY/WAIT/CLUSTER, then a BLANK."""
    rnd = random.Random(7)
    out = bytearray()
    for i in range(records):
        out += encode_record(
            topic=f"OrderTopic{i % 4}",
            queue_id=i % 8,
            body=rnd.randbytes(BODY_SIZE),
            properties={
                "UNIQ_KEY": f"7F0000010ABC18B4AAC2{i:012X}",
                "CLUSTER": "DefaultCluster",
                "TAGS": f"Tag{i % 16}",
                "KEYS": f"order-{i} user-{i % 1000}",
                "WAIT": "true",
            },
            queue_offset=i // 8,
            physical_offset=BASE + len(out),
            born_timestamp=1_700_000_000_000 + i,
            store_timestamp=1_700_000_000_005 + i,
            born_host=f"10.0.{i % 4}.{i % 50}:{40000 + i % 7}",
            store_host="10.0.0.1:10911",
        )
    out += encode_blank(64) + bytes(56)
    return np.frombuffer(bytes(out), dtype=np.uint8)


# ---------------------------------------------------------------------------------------------
# the baseline: a straightforward per-record decoder producing the same columns as Python values

_HEAD = struct.Struct(">iIiiiqqiq")


def _host(data: bytes) -> str:
    if len(data) == 8:
        return f"{socket.inet_ntop(socket.AF_INET, data[:4])}:{int.from_bytes(data[4:], 'big', signed=True)}"
    return f"[{socket.inet_ntop(socket.AF_INET6, data[:16])}]:{int.from_bytes(data[16:], 'big', signed=True)}"


def _decompress(body: bytes, sys_flag: int) -> bytes:
    kind = (sys_flag >> 8) & 7
    if kind == 1:
        return lz4.frame.decompress(body)
    if kind == 2:
        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    return zlib.decompress(body)


def baseline_decode(buf: bytes) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {name: [] for name in COLUMN_NAMES}
    pos = 0
    while pos + 8 <= len(buf):
        size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts = _HEAD.unpack_from(buf, pos)
        if magic == BLANK_MAGIC:
            break
        p = pos + 48
        bh = 20 if sys_flag & 0x10 else 8
        sh = 20 if sys_flag & 0x20 else 8
        born_host = buf[p : p + bh]
        p += bh
        (store_ts,) = struct.unpack_from(">q", buf, p)
        store_host = buf[p + 8 : p + 8 + sh]
        p += 8 + sh
        reconsume, prepared, body_len = struct.unpack_from(">iqi", buf, p)
        p += 16
        body = buf[p : p + body_len]
        p += body_len
        if magic == MAGIC_V2:
            (topic_len,) = struct.unpack_from(">h", buf, p)
            p += 2
        else:
            topic_len = buf[p] - 256 if buf[p] > 127 else buf[p]
            p += 1
        topic = buf[p : p + topic_len].decode("utf-8", "replace")
        p += topic_len
        (props_len,) = struct.unpack_from(">h", buf, p)
        props: dict[str, str] = {}
        for segment in buf[p + 2 : p + 2 + props_len].decode("utf-8", "replace").split("\x02"):
            sep = segment.find("\x01")
            if 0 < sep < len(segment) - 1:
                props[segment[:sep]] = segment[sep + 1 :]
        keys = props.get("KEYS")
        if sys_flag & 1:
            body = _decompress(body, sys_flag)
        row = {
            "topic": topic,
            "queueId": queue_id,
            "queueOffset": queue_offset,
            "commitLogOffset": phys,
            "storeSize": size,
            "msgId": (store_host + phys.to_bytes(8, "big")).hex().upper(),
            "uniqKey": props.get("UNIQ_KEY"),
            "key": keys,
            "keys": None if keys is None else [k for k in keys.split(" ") if k],
            "tags": props.get("TAGS"),
            "body": body,
            "bodyCrc": crc,
            "flag": flag,
            "sysFlag": sys_flag,
            "bornTimestamp": born_ts,
            "storeTimestamp": store_ts,
            "bornHost": _host(born_host),
            "storeHost": _host(store_host),
            "reconsumeTimes": reconsume,
            "preparedTransactionOffset": prepared,
            "properties": props,
        }
        for name, value in row.items():
            cols[name].append(value)
        pos += size
    return cols


# ---------------------------------------------------------------------------------------------


def columnar_decode(buf: np.ndarray, columns: list[str] | None) -> pa.RecordBatch:
    walk = walk_records(buf, BASE, 0, len(buf))
    return decode_records(buf, walk.starts, BASE, columns)


def cpu_seconds(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best process CPU time of `repeat` runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None  # free the previous output first, as a consumer of successive batches does
        start = time.process_time()
        result = fn()
        best = min(best, time.process_time() - start)
    return best, result


@pytest.mark.bench
def test_bench_decode() -> None:
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    build_start = time.perf_counter()
    buf = build_segment(RECORDS)
    built = time.perf_counter() - build_start
    print(f"\nsegment: {RECORDS} records, {len(buf) / 2**20:.1f} MiB, built in {built:.1f}s")
    raw = buf.tobytes()
    warm_start = time.perf_counter()
    columnar_decode(buf[: 64 << 10], None)  # JIT compile, or load the cached kernels
    print(f"first call (kernel compile or cache load): {time.perf_counter() - warm_start:.2f}s wall")

    base_s, base_cols = cpu_seconds(lambda: baseline_decode(raw), 1)
    walk_s, walk = cpu_seconds(lambda: walk_records(buf, BASE, 0, len(buf)), 3)
    all_s, batch = cpu_seconds(lambda: columnar_decode(buf, None), 3)
    proj_s, projected = cpu_seconds(lambda: columnar_decode(buf, PROJECTION), 3)

    assert len(walk.starts) == RECORDS and walk.stop_kind == "blank"
    sample = slice(0, 200)
    for name in ("msgId", "key", "keys", "bornHost", "body", "topic"):
        assert batch.column(name)[sample].to_pylist() == base_cols[name][sample], name
    maps = batch.column("properties")[sample].to_pylist()
    assert [dict(m) for m in maps] == base_cols["properties"][sample]
    assert projected.column("key").to_pylist() == base_cols["key"]

    def rate(seconds: float) -> str:
        return f"{RECORDS / seconds / 1e6:6.2f} M msgs/s ({seconds * 1000:7.1f} ms CPU)"

    print(f"baseline struct decoder, all columns : {rate(base_s)}")
    print(f"walk_records only                    : {rate(walk_s)}  {base_s / walk_s:5.1f}x baseline")
    print(f"walk + decode, all columns           : {rate(all_s)}  {base_s / all_s:5.1f}x baseline")
    print(f"walk + decode, {PROJECTION}: {rate(proj_s)}  {base_s / proj_s:5.1f}x baseline")
