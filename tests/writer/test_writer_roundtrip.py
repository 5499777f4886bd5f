"""Writer -> reader round trip for random messages (hypothesis), read back with the format layer.

Each example writes a store with random segment size, hosts, keys, properties, bodies and
compression, then walks the commit log like recovery does and compares every field, the
segment layout (§2.1, §2.6), the consume queues (§4.1) and the index (§5.4) with brute-force
rebuilds.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import hypothesis.strategies as st
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from scalar_log import (
    all_entries,
    expected_index_keys,
    expected_units,
    index_views,
    segment_paths,
    walk_log,
    written_units,
)

from rmqstore.format.layout import (
    COMPRESSION_TYPE_SHIFT,
    END_FILE_MIN_BLANK_LENGTH,
    SYSFLAG_COMPRESSED,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.record import SCHEDULE_TOPIC
from rmqstore.plan.lookup import find_by_key, find_by_msg_id
from rmqstore.store import Store
from rmqstore.writer import MessageSpec, StoreWriter

SAFE_TEXT = st.characters(exclude_categories=("Cs",), exclude_characters="\x00\x01\x02 ")
TOKEN = st.text(SAFE_TEXT, min_size=1, max_size=6)
TOPICS = ("TopicTest", "订单-Topic", "%RETRY%cg", "T" * 130)


@st.composite
def host(draw) -> str:
    port = draw(st.integers(0, 65535))
    if draw(st.booleans()):
        return f"{draw(st.ip_addresses(v=4))}:{port}"
    return f"[{draw(st.ip_addresses(v=6))}]:{port}"


@st.composite
def message(draw, max_body: int) -> MessageSpec:
    keys = draw(
        st.one_of(
            st.none(),
            st.lists(TOKEN, min_size=1, max_size=3),
            st.lists(st.sampled_from(["", "a", "😀", "订单"]), max_size=4).map(" ".join),
        )
    )
    return MessageSpec(
        topic=draw(st.sampled_from(TOPICS)),
        body=draw(st.binary(max_size=max_body)),
        queue_id=draw(st.one_of(st.none(), st.integers(0, 3))),
        tags=draw(st.one_of(st.none(), st.text(SAFE_TEXT, max_size=8))),
        keys=keys,
        properties=draw(
            st.dictionaries(TOKEN.map("u_".__add__), st.text(SAFE_TEXT, min_size=1, max_size=8), max_size=3)
        ),
        flag=draw(st.integers(-(2**31), 2**31 - 1)),
        born_host=draw(host()),
        compression=draw(st.one_of(st.none(), st.integers(0, 3))),
        delay_level=draw(st.sampled_from([0, 0, 0, 1, 3, 18, 25])),
        transaction=draw(
            st.sampled_from(
                [TRANSACTION_NOT_TYPE] * 5 + [TRANSACTION_PREPARED, TRANSACTION_COMMIT, TRANSACTION_ROLLBACK]
            )
        ),
        auto_uniq_key=draw(st.booleans()),
        reconsume_times=draw(st.integers(0, 16)),
    )


@st.composite
def store_case(draw):
    segment_size = draw(st.sampled_from([1024, 2048, 8192, 1 << 16]))
    specs = draw(st.lists(message(max_body=segment_size // 5), min_size=1, max_size=25))
    batch_after = draw(st.integers(0, len(specs)))
    store_host = draw(host())
    index_entries = draw(st.sampled_from([5, 12, 400]))
    return segment_size, specs, batch_after, store_host, index_entries


def assert_store_reads_the_same(path: Path, geometry: tuple[int, int], records: list) -> None:
    """`Store` (columnar scan, index lookups) agrees with the scalar walk."""
    with Store.open(path, index_geometry=geometry) as opened:
        rows = [row for batch in opened.scan() for row in _rows_ms(batch)]
        assert rows == [r.to_row() for r in records]
        for record in records:
            if record.sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_ROLLBACK:
                continue  # not indexed by the broker (§5.4), so not found by an index lookup
            for key in record.keys or ():
                assert record.commit_log_offset in find_by_key(opened, key, [record.topic])
            assert find_by_msg_id(opened, record.msg_id) == [record.commit_log_offset]


def _rows_ms(batch: pa.RecordBatch) -> list[dict]:
    """Rows with timestamps as epoch ms and maps as dicts, like `MessageRecord.to_row`."""
    columns = {name: batch.column(name) for name in batch.schema.names}
    for name in ("bornTimestamp", "storeTimestamp"):
        columns[name] = pc.divide(pc.cast(columns[name], pa.int64()), 1000)
    rows = pa.RecordBatch.from_pydict(columns).to_pylist()
    for row in rows:
        row["properties"] = dict(row["properties"])
    return rows


def stored_topic(spec: MessageSpec) -> str:
    delayed = spec.delay_level > 0 and spec.transaction in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT)
    return SCHEDULE_TOPIC if delayed else spec.topic


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(store_case())
def test_random_messages_round_trip(case) -> None:
    segment_size, specs, batch_after, store_host, index_entries = case
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        writer = StoreWriter(
            store,
            segment_size=segment_size,
            cq_segment_size=100,
            index_hash_slots=7,
            index_entries=index_entries,
            store_host=store_host,
            seed=3,
        )
        results = [writer.append(spec) for spec in specs]
        batch = [
            MessageSpec(topic="BatchTopic", body=bytes([i]) * 30, keys=f"b{i}")
            for i in range(batch_after % 4)
        ]
        batch_results = writer.append_batch(batch) if batch else []
        writer.close()

        records, blanks, end = walk_log(store)
        assert len(records) == len(specs) + len(batch)
        assert end == writer.position
        for spec, result, record in zip(specs, results, records, strict=False):
            assert record.commit_log_offset == result.physical_offset
            assert record.msg_id == result.msg_id
            assert record.store_size == result.store_size
            assert record.topic == stored_topic(spec)
            assert record.body == spec.body
            assert record.tags == (spec.tags or None)
            assert record.key == (spec.keys_property() or None)
            assert record.flag == spec.flag
            assert record.born_host == spec.born_host
            assert record.store_host == store_host
            assert record.reconsume_times == spec.reconsume_times
            assert record.uniq_key == result.uniq_key
            assert (record.uniq_key is not None) == spec.auto_uniq_key
            assert record.sys_flag & SYSFLAG_TRANSACTION_MASK == spec.transaction
            if spec.compression is not None:
                assert record.sys_flag & SYSFLAG_COMPRESSED
                assert record.sys_flag >> COMPRESSION_TYPE_SHIFT & 7 == spec.compression
            for name, value in spec.properties.items():
                assert record.properties[name] == value
            if record.topic == SCHEDULE_TOPIC:
                assert record.queue_id == min(spec.delay_level, 18) - 1
                assert record.properties["REAL_TOPIC"] == spec.topic
        for result, record in zip(batch_results, records[len(specs) :], strict=True):
            assert (record.commit_log_offset, record.queue_offset) == (
                result.physical_offset,
                result.queue_offset,
            )
        if batch_results:
            offsets = [r.queue_offset for r in batch_results]
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
            assert len({r.physical_offset // segment_size for r in batch_results}) == 1

        # §2.1/§2.6: pre-sized segments; every full segment ends with a BLANK that was needed.
        paths = segment_paths(store)
        assert all(p.stat().st_size == segment_size for p in paths)
        assert [int(p.name) for p in paths] == [i * segment_size for i in range(len(paths))]
        assert int(paths[-1].name) == (end // segment_size + 1) * segment_size, "pre-allocated next segment"
        assert [b[0] // segment_size for b in blanks] == list(range(len(blanks)))
        blocks = [(r.physical_offset, r.store_size) for r in results]
        if batch_results:
            blocks.append((batch_results[0].physical_offset, sum(r.store_size for r in batch_results)))
        first_block = {}
        for offset, size in blocks:
            first_block.setdefault(offset // segment_size, size)
        for blank_offset, blank_size in blanks:
            assert first_block[blank_offset // segment_size + 1] + END_FILE_MIN_BLANK_LENGTH > blank_size

        assert written_units(store) == expected_units(records)

        assert_store_reads_the_same(store, (7, index_entries), records)

        views = index_views(store, 7, index_entries)
        keys = expected_index_keys(records)
        assert len(all_entries(views)) == len(keys)
        for key, phy in keys:
            assert any(phy in view.candidates(key, 0, 2**62) for _, view in views), key
