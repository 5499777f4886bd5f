"""The predicate model: every row a predicate's mask keeps is inside its bounds, for every kind and for
conjunctions (hypothesis over generated batches); the bounds are exactly what the planner narrows by."""

from __future__ import annotations

from typing import get_args

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqstore.format.layout import (
    TRANSACTION_COMMIT,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.msgid import offset_msg_id
from rmqstore.format.table import COLUMNS
from rmqstore.plan.predicates import (
    PLANNABLE_COLUMNS,
    Bounds,
    Compare,
    InSet,
    KeysContainAny,
    NotNull,
    Predicate,
    QueueWindow,
    QueueWindows,
    bounds,
    describe,
    mask,
    ms_window,
    predicate_columns,
    time_predicates,
)

HOST = bytes([10, 0, 0, 1]) + (10911).to_bytes(4, "big")
TOPICS = ("A", "B", "C")
TOKENS = ("x", "y", "k1", "")
TAGS = ("t1", "t2")
OPS = ("=", "<", "<=", ">", ">=")
BATCH_COLUMNS = ("topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "key", "keys",
                 "tags", "sysFlag", "storeTimestamp")
RANGED = ("queueId", "queueOffset", "commitLogOffset", "storeTimestamp", "topic")

_key = st.one_of(st.none(), st.lists(st.sampled_from(TOKENS), min_size=1, max_size=3).map(" ".join))
_row = st.fixed_dictionaries({
    "topic": st.one_of(st.none(), st.sampled_from(TOPICS)),
    "queueId": st.one_of(st.none(), st.integers(0, 3)),
    "queueOffset": st.one_of(st.none(), st.integers(0, 40)),
    "commitLogOffset": st.integers(0, 5000),
    "uniqKey": st.one_of(st.none(), st.sampled_from(("u1", "u2", "u3"))),
    "key": _key,
    "tags": st.one_of(st.none(), st.sampled_from(TAGS)),
    "sysFlag": st.sampled_from((TRANSACTION_NOT_TYPE, TRANSACTION_PREPARED, TRANSACTION_COMMIT,
                                TRANSACTION_ROLLBACK, 0x1 | TRANSACTION_COMMIT)),
    "storeTimestamp": st.integers(0, 5000).map(lambda ms: ms * 1000),  # stored times are whole ms (µs here)
})


def _full(row: dict) -> dict:
    """The row with msgId and keys derived as the decoder does (storeTimestamp stays epoch µs)."""
    keys = None if row["key"] is None else [t for t in row["key"].split(" ") if t]
    return {**row, "msgId": offset_msg_id(HOST, row["commitLogOffset"]), "keys": keys}


def _batch(rows: list[dict]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([_full(r) for r in rows],
                                      schema=pa.schema([(c, COLUMNS[c]) for c in BATCH_COLUMNS]))


def _value(column: str) -> st.SearchStrategy:
    """Literals for `column`, mostly from the rows' domain, some outside it."""
    return {
        "topic": st.sampled_from((*TOPICS, "Z")),
        "queueId": st.integers(-2, 5),
        "queueOffset": st.integers(-2, 45),
        "commitLogOffset": st.integers(-2, 5005),
        "msgId": st.one_of(st.integers(0, 5000).map(lambda o: offset_msg_id(HOST, o)),
                           st.sampled_from(("not-an-id", "0" * 32))),
        "uniqKey": st.sampled_from(("u1", "u2", "u9")),
        "key": _key.filter(lambda k: k is not None),
        "tags": st.sampled_from((*TAGS, "t9")),
        "storeTimestamp": st.integers(-2000, 5_002_000),  # µs, whole ms or not
    }[column]


def _compare(column: str) -> st.SearchStrategy:
    ops = OPS if column in RANGED else ("=",)
    return st.builds(Compare, st.just(column), st.sampled_from(ops), _value(column))


def _in_set(column: str) -> st.SearchStrategy:
    return st.builds(InSet, st.just(column), st.lists(_value(column), max_size=4, unique=True).map(tuple))


_window = st.builds(QueueWindow, st.sampled_from(TOPICS), st.integers(0, 3), st.integers(0, 40),
                    st.integers(0, 45))
_columns = st.sampled_from(sorted(PLANNABLE_COLUMNS))
KINDS: dict[str, st.SearchStrategy] = {
    "Compare": _columns.flatmap(_compare),
    "InSet": _columns.flatmap(_in_set),
    "NotNull": st.builds(NotNull, st.sampled_from(("topic", "key", "uniqKey", "tags", "queueId"))),
    "KeysContainAny": st.builds(KeysContainAny, st.lists(st.sampled_from((*TOKENS, "z")), min_size=1,
                                                         max_size=3).map(tuple)),
    "QueueWindows": st.builds(QueueWindows, st.lists(_window, max_size=3,
                                                     unique_by=lambda w: (w.topic, w.queue_id)).map(tuple)),
}


def inside(b: Bounds, row: dict) -> bool:
    """The row is inside the bounds (the planner reads no fewer rows than these)."""
    ms = row["storeTimestamp"] // 1000
    probes = {"key": row["key"], "uniqKey": row["uniqKey"]}
    window = {(w.topic, w.queue_id): w for w in b.windows.windows} if b.windows is not None else None
    checks = [
        not b.empty,
        b.points is None or row["commitLogOffset"] in b.points,
        b.lo is None or row["commitLogOffset"] >= b.lo,
        b.hi is None or row["commitLogOffset"] < b.hi,
        b.begin_ms is None or ms >= b.begin_ms,
        b.end_ms is None or ms <= b.end_ms,
        all(any(t in values for t in row["keys"] or ()) if kind == "keysContain" else probes[kind] in values
            for kind, values in b.probes.items()),
        b.topics is None or row["topic"] in b.topics,
        b.queue_ids is None or row["queueId"] in b.queue_ids,
        b.queue_lo is None or (row["queueOffset"] is not None and row["queueOffset"] >= b.queue_lo),
        b.queue_hi is None or (row["queueOffset"] is not None and row["queueOffset"] < b.queue_hi),
        b.tags is None or row["tags"] in b.tags,
        window is None or ((row["topic"], row["queueId"]) in window
                           and window[row["topic"], row["queueId"]].start <= row["queueOffset"]
                           < window[row["topic"], row["queueId"]].end),
    ]
    return all(checks)


def _assert_mask_within_bounds(rows: list[dict], predicates: list[Predicate]) -> None:
    batch = _batch(rows)
    kept = mask(batch, predicates).to_pylist()
    b = bounds(predicates)
    for row, hit in zip(map(_full, rows), kept, strict=True):
        if hit:
            assert inside(b, row), (row, predicates, b)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_masks_only_rows_inside_its_bounds(kind: str) -> None:
    @settings(max_examples=300, deadline=None)
    @given(rows=st.lists(_row, min_size=1, max_size=30), predicate=KINDS[kind])
    def check(rows: list[dict], predicate: Predicate) -> None:
        _assert_mask_within_bounds(rows, [predicate])

    check()


@settings(max_examples=400, deadline=None)
@given(rows=st.lists(_row, min_size=1, max_size=30),
       predicates=st.lists(st.one_of(*KINDS.values()), min_size=2, max_size=4))
def test_a_conjunction_masks_only_rows_inside_the_intersected_bounds(rows: list[dict],
                                                                     predicates: list[Predicate]) -> None:
    _assert_mask_within_bounds(rows, predicates)


def test_every_kind_is_handled_by_every_consumer() -> None:
    samples = [Compare("topic", "=", "A"), InSet("queueId", (1,)), NotNull("key"), KeysContainAny(("x",)),
               QueueWindows((QueueWindow("A", 0, 0, 5),))]
    assert {type(p) for p in samples} == set(get_args(Predicate))
    batch = _batch([{"topic": "A", "queueId": 0, "queueOffset": 1, "commitLogOffset": 0, "uniqKey": None,
                     "key": "x", "tags": None, "sysFlag": 0, "storeTimestamp": 0}])
    assert [mask(batch, [p]).to_pylist() for p in samples] == [[True], [False], [True], [True], [True]]
    assert [describe(p) for p in samples] == ["topic = 'A'", "queueId IN (1)", "key IS NOT NULL",
                                              "keys contain any of ['x']", "queue windows (1 queues)"]
    assert predicate_columns(samples) == ("topic", "queueId", "queueOffset", "key", "keys", "sysFlag")
    with pytest.raises(TypeError, match="not a predicate"):
        bounds(["topic = 'A'"])  # type: ignore[list-item]


def test_bounds_are_what_the_planner_narrows_by() -> None:
    b = bounds([Compare("commitLogOffset", ">=", 100), Compare("commitLogOffset", "<", 900),
                InSet("topic", ("A", "B")), Compare("topic", "=", "B"), Compare("queueId", "<", 2),
                Compare("queueOffset", ">", 4), InSet("key", ("a b", "c")), Compare("key", "=", "d"),
                KeysContainAny(("x", "y")), Compare("storeTimestamp", ">=", 1_500),
                Compare("storeTimestamp", "<", 9_000), Compare("msgId", "=", offset_msg_id(HOST, 300)),
                Compare("msgId", "<", "zz"), NotNull("tags")])
    assert b == Bounds(points={300}, lo=100, hi=900, begin_ms=2, end_ms=8,
                       probes={"key": ("d",), "keysContain": ("x", "y")}, topics={"B"}, queue_ids={0, 1},
                       queue_lo=5)
    assert not b.empty
    assert bounds([InSet("msgId", ("not-an-id",))]).empty  # no offsetMsgId: no record
    assert bounds([Compare("queueId", "<", 0)]).empty  # queue ids are >= 0, like the JVM planner
    assert bounds([Compare("storeTimestamp", "=", 2_000_500)]) == Bounds(begin_ms=2001, end_ms=2000)


def test_time_window_round_trips_between_ms_and_predicates() -> None:
    assert time_predicates(None, None) == ()
    assert time_predicates(5, 7) == (Compare("storeTimestamp", ">=", 5000),
                                     Compare("storeTimestamp", "<", 8000))
    b = bounds(time_predicates(5, 7))
    assert (b.begin_ms, b.end_ms) == (5, 7)
    assert ms_window(4001, 8000) == (5, 7)
    batch = _batch([{"topic": "A", "queueId": 0, "queueOffset": 0, "commitLogOffset": 0, "uniqKey": None,
                     "key": None, "tags": None, "sysFlag": 0, "storeTimestamp": ms * 1000}
                    for ms in range(4, 9)])
    assert mask(batch, time_predicates(5, 7)).to_pylist() == [False, True, True, True, False]


def test_queue_windows_name_each_queue_once() -> None:
    """Two windows of one queue would make the bounds (one window per queue) narrower than the mask."""
    with pytest.raises(ValueError, match="more than once"):
        QueueWindows((QueueWindow("B", 1, 0, 1), QueueWindow("B", 1, 0, 0)))
