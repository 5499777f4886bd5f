"""Units lost at a queue's end (`Store.lost_at_end`, docs/damage.md §3): the records of the queue past its
units in the bytes no unit covers, below the dispatch frontier; read at a cost flat in what the other
queues wrote since the queue went idle."""

from __future__ import annotations

import pytest

from helpers.store_builder import StoreBuilder, Written, fill
from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.store import Store


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))


def _drop_unit(b: StoreBuilder, rec: Written) -> None:
    """Take back the unit the builder wrote for `rec`, the last of its queue: the queue ends before it."""
    units = b.queues[(rec.topic, rec.queue_id)]
    assert int.from_bytes(units[-1][:8], "big") == rec.offset
    units.pop()


def _decoded_by_lookup(store: Store, topic: str) -> tuple[list, int]:
    """`lost_at_end(topic, 0)` and how many records it decoded, the coverage verdicts already computed."""
    store.uncovered_ranges()  # what every plan computes once (and caches outside the store)
    before = store.stats.records_decoded
    return store.lost_at_end(topic, 0), store.stats.records_decoded - before


def test_an_idle_queue_costs_no_read_of_what_the_others_wrote_since(builder: StoreBuilder) -> None:
    builder.append("Idle", keys="a")
    builder.append("Idle", keys="b")
    fill(builder, 200, topics=("Busy",))
    with Store.open(builder.finish()) as store:
        assert len(store.segments) > 10
        assert _decoded_by_lookup(store, "Idle") == ([], 0)


def test_a_lost_last_unit_names_its_file_byte_and_record(builder: StoreBuilder) -> None:
    builder.append("Idle", keys="a")
    lost = builder.append("Idle", keys="b")
    _drop_unit(builder, lost)
    fill(builder, 200, topics=("Busy",))
    with Store.open(builder.finish()) as store:
        damage, decoded = _decoded_by_lookup(store, "Idle")
    assert decoded == 1  # the one record no unit covers, not the log after it
    [d] = damage
    assert d.path.endswith("consumequeue/Idle/0/00000000000000000000")
    assert (d.position, d.queue_offset) == (20, 1)
    assert f"queue offset 1 is at commit-log offset {lost.offset}" in d.cause


def test_a_record_past_the_dispatch_frontier_is_not_lost(builder: StoreBuilder) -> None:
    """No unit and no index entry names anything after it: the dispatcher has not reached it yet (the
    queue's last record is before the frontier, so the gap after it is looked at, up to the frontier)."""
    fill(builder, 40, topics=("Busy",))
    builder.append("Idle")
    builder.append("Busy", keys="last")
    _drop_unit(builder, builder.append("Idle"))
    with Store.open(builder.finish()) as store:
        assert store.lost_at_end("Idle", 0) == []
