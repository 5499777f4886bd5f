"""Finding the records of one store that satisfy predicates, without Spark: `plan_read`, `run_task`
and `confirm`, the path the Spark sources take. So `find_by_key`, `rmqstore query --key` and the
source's `keys` option return the same records on every store (ROLLBACK records, records past the
index's end and lost index files through the side index, `Store.side_index`), and a lookup reads what
the planner chose: index slots and the matching records when the index can answer, a scan otherwise
(a note says why).

Keys follow RocketMQ's `queryMsgByKey` meaning (the value is one of the record's space-separated
KEYS tokens), with no 64/32-result cap. Time bounds are inclusive epoch milliseconds of the record's
storeTimestamp.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, ReadPlan, plan_read
from rmqstore.plan.predicates import (
    Compare,
    InSet,
    KeysContainAny,
    Predicate,
    predicate_columns,
    time_predicates,
)
from rmqstore.store import Store


@dataclass
class Found:
    """The commitLogOffsets of the matching records, ascending, and the plan that found them."""

    offsets: list[int]
    plan: ReadPlan


def find(store: Store, predicates: Sequence[Predicate], *, settings: PlanSettings | None = None,
         read: ReadSettings | None = None, task_done: Callable[[], object] | None = None) -> Found:
    """The records of `store` satisfying every predicate: planned, read and confirmed like a Spark read
    (decoding only the columns the predicates need). `task_done` is called after each read task."""
    plan = plan_read([store], [tuple(predicates)], settings or PlanSettings())
    columns = tuple(dict.fromkeys(("commitLogOffset", *predicate_columns(tuple(predicates)))))
    offsets: set[int] = set()
    for task in plan.tasks:
        for batch in run_task(task, store, columns, read or ReadSettings()):
            offsets.update(confirm(batch, predicates).column("commitLogOffset").to_pylist())
        if task_done is not None:
            task_done()
    return Found(sorted(offsets), plan)


def key_predicates(key: str, topics: Iterable[str] | None = None, begin_ms: int | None = None,
                   end_ms: int | None = None) -> tuple[Predicate, ...]:
    """Records whose KEYS tokens include `key`, of `topics` (None: any), in the time window."""
    return (KeysContainAny((key,)), *_topics(topics), *time_predicates(begin_ms, end_ms))


def uniq_key_predicates(uniq_key: str, topics: Iterable[str] | None = None, begin_ms: int | None = None,
                        end_ms: int | None = None) -> tuple[Predicate, ...]:
    """Records whose UNIQ_KEY (the client message id) is `uniq_key`, of `topics`, in the time window."""
    return (Compare("uniqKey", "=", uniq_key), *_topics(topics), *time_predicates(begin_ms, end_ms))


def msg_id_predicates(msg_id: str, topics: Iterable[str] | None = None, begin_ms: int | None = None,
                      end_ms: int | None = None) -> tuple[Predicate, ...]:
    """The record whose offsetMsgId (§3.1: its store host and offset) is `msg_id` (hex: any case),
    of `topics`, in the time window."""
    return (Compare("msgId", "=", msg_id.upper()), *_topics(topics), *time_predicates(begin_ms, end_ms))


def _topics(topics: Iterable[str] | None) -> tuple[Predicate, ...]:
    return () if topics is None else (InSet("topic", tuple(sorted(set(topics)))),)


def find_by_key(store: Store, key: str, topics: Iterable[str] | None = None, begin_ms: int | None = None,
                end_ms: int | None = None) -> list[int]:
    """Physical offsets, ascending, of every record whose KEYS tokens include `key` (`key_predicates`)."""
    return _offsets(store, key_predicates(key, topics, begin_ms, end_ms))


def find_by_uniq_key(store: Store, uniq_key: str, topics: Iterable[str] | None = None,
                     begin_ms: int | None = None, end_ms: int | None = None) -> list[int]:
    """Like `find_by_key` for the UNIQ_KEY property (the client message id)."""
    return _offsets(store, uniq_key_predicates(uniq_key, topics, begin_ms, end_ms))


def find_by_msg_id(store: Store, msg_id: str) -> list[int]:
    """[offset] when `msg_id` is the offsetMsgId (§3.1) of a record of this store (its store host and
    offset), else [] (also for ids that are not offsetMsgIds, e.g. a UNIQ_KEY)."""
    return _offsets(store, msg_id_predicates(msg_id))


def _offsets(store: Store, predicates: Sequence[Predicate]) -> list[int]:
    return find(store, predicates).offsets  # the planner logs its notes (logger rmqstore.plan)
