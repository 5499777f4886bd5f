"""`rmqstore verify STORE`: sanity checks in the spirit of kafka-dump-log's.

1. Commit log: every record's BODYCRC and structure (§2.12), records back to back in each segment,
   and what lies after the valid end (zeros, or a torn tail that only a crash explains; valid
   records there, which a restarted broker would overwrite, are named with their count and bytes).
2. Consume queues <-> commit log (§4.1): every unit points at a record of that topic, queue and
   queue offset with that size and tagsCode (through its ConsumeQueueExt unit when the tagsCode is an
   ext address, §4.4); every NOT/COMMIT record has its unit, in a BatchConsumeQueue for a BatchCQ topic
   (§4.5), and one in each queue its multi-dispatch properties name (LMQ, §4.6).
3. Index <-> commit log (§5.4): every entry is reachable from its slot and points at a record one
   of whose indexed keys has the entry's hash; every indexed key of every record has its entry.

Prints a summary; the exit status is 0 when the store is sound and 1 when it is not. Units and
entries that point past the log's end are errors for a cleanly shut down store and warnings when
the `abort` file says the broker crashed (recovery would truncate or rebuild them).

Root causes come first: each damaged place in the commit log (the walk steps over it to the next
valid record, like `mode=PERMISSIVE`) is one error, and what follows from it (consume-queue units
and index entries pointing into the damaged bytes, the gap in the record sequence) is counted
under it instead of being listed one by one.
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.cli.options import add_output_arguments, add_store_arguments, open_store, progress
from rmqstore.cli.output import print_fields, print_json
from rmqstore.format.consumequeue import (
    DEFAULT_DELAY_LEVEL_TABLE,
    is_ext_address,
    is_filler,
    parse_delay_levels,
    record_tags_code,
)
from rmqstore.format.indexfile import INDEX_HEADER_SIZE, TAG_INDEX_PREFIX, IndexFileView, index_key
from rmqstore.format.javahash import index_key_hash, tags_code
from rmqstore.format.layout import (
    QUEUED_TRANSACTION_TYPES,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.record import (
    MULTI_DISPATCH_SKIPPED,
    PROPERTY_INNER_MULTI_DISPATCH,
    PROPERTY_INNER_MULTI_QUEUE_OFFSET,
    SCHEDULE_TOPIC,
    check_record,
    dispatched_queues,
)
from rmqstore.store import Store
from rmqstore.store.consumequeue import BatchConsumeQueue
from rmqstore.store.stats import Skipped

_SHOWN_PER_CHECK = 20
_LOG_COLUMNS = [
    "commitLogOffset",
    "storeSize",
    "topic",
    "queueId",
    "queueOffset",
    "sysFlag",
    "tags",
    "uniqKey",
    "keys",
    "storeTimestamp",
    "properties",
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify", help="CRCs, consume queues and index against the commit log; exit 1 if unsound"
    )
    add_store_arguments(parser)
    parser.add_argument(
        "--delay-levels",
        type=parse_delay_levels,
        default=DEFAULT_DELAY_LEVEL_TABLE,
        metavar="SPEC",
        help="the broker's messageDelayLevel, e.g. '1s 1s 1s 2h' (default RocketMQ's): SCHEDULE_TOPIC_XXXX "
        "tagsCodes are delivery times computed with it (§4.2)",
    )
    add_output_arguments(parser)
    parser.set_defaults(func=run)


@dataclass
class Findings:
    """Errors and warnings per check, counted in full, the first few kept as text."""

    crashed: bool
    errors: Counter = field(default_factory=Counter)
    warnings: Counter = field(default_factory=Counter)
    error_examples: dict[str, list[str]] = field(default_factory=dict)
    warning_examples: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    damage: list[Skipped] = field(default_factory=list)
    """Damaged places of the commit log, by offset (root causes)."""
    consequences: list[Counter] = field(default_factory=list)
    """Per damaged place: what points into it, by kind."""

    def set_damage(self, places: list[Skipped]) -> None:
        self.damage = sorted(places, key=lambda place: place.offset)
        self.consequences = [Counter() for _ in self.damage]
        self._starts = np.asarray([place.offset for place in self.damage], dtype=np.int64)

    def follows_from_damage(self, offset: int, what: str, count: int = 1) -> bool:
        """Count `what` under the damaged place holding `offset`; False when no damage holds it."""
        if not self.damage:
            return False
        i = int(np.searchsorted(self._starts, offset, side="right")) - 1
        if i < 0 or offset >= self.damage[i].offset + max(self.damage[i].length, 1):
            return False
        self.consequences[i][what] += count
        return True

    def report_damage(self) -> None:
        """One error per damaged place, before the other commit-log errors, with its consequences."""
        texts = []
        for place, counted in zip(self.damage, self.consequences, strict=True):
            follows = ", ".join(f"{n} {what}" for what, n in sorted(counted.items()))
            texts.append(f"{place}" + (f"; pointing into it: {follows}" if follows else ""))
        if texts:
            self.errors["commit log"] += len(texts)
            shown = self.error_examples.setdefault("commit log", [])
            shown[:0] = texts[:_SHOWN_PER_CHECK]
            del shown[_SHOWN_PER_CHECK:]

    def error(self, check: str, text: str) -> None:
        self._add(self.errors, self.error_examples, check, text)

    def warning(self, check: str, text: str) -> None:
        self._add(self.warnings, self.warning_examples, check, text)

    def past_end(self, check: str, text: str) -> None:
        """Something points past the log end: expected after a crash, corruption otherwise."""
        (self.warning if self.crashed else self.error)(
            check, text + (" (crash: recovery would drop it)" if self.crashed else "")
        )

    @staticmethod
    def _add(counter: Counter, examples: dict[str, list[str]], check: str, text: str) -> None:
        counter[check] += 1
        shown = examples.setdefault(check, [])
        if len(shown) < _SHOWN_PER_CHECK:
            shown.append(text)

    @property
    def sound(self) -> bool:
        return not self.errors


@dataclass
class LogRecords:
    """The columns of every valid record that the queue and index checks need."""

    offset: np.ndarray
    size: np.ndarray
    topic: list[str]
    queue_id: list[int]
    queue_offset: list[int]
    sys_flag: list[int]
    tags: list[str | None]
    uniq_key: list[str | None]
    keys: list[list[str] | None]
    store_ms: list[int]
    dispatch: dict[int, tuple[str, str]]
    """Row -> (INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET) of the multi-dispatched records (§4.6)."""


def check_commit_log(store: Store, findings: Findings, args: argparse.Namespace) -> LogRecords:
    """Walk the whole log with CRC checks (PERMISSIVE: the walk steps over damaged places)."""
    start, end = store.min_offset, store.max_offset
    parts: dict[str, list[Any]] = {name: [] for name in _LOG_COLUMNS}
    with progress(args, max(end - start, 0), "commit log") as bar:
        for batch in store.scan(start, end, _LOG_COLUMNS, check_crc=True, mode="PERMISSIVE"):
            if not batch.num_rows:
                continue
            for name in _LOG_COLUMNS:
                column = batch.column(name)
                if name == "storeTimestamp":
                    column = pc.divide(pc.cast(column, pa.int64()), 1000)
                if name == "properties":
                    column = pc.map_lookup(column, PROPERTY_INNER_MULTI_DISPATCH, "first")
                    rows = len(parts[name])
                    parts[name].extend(rows + i for i in np.flatnonzero(column.is_valid()).tolist())
                    continue
                parts[name].extend(column.to_pylist())
            bar.update(parts["commitLogOffset"][-1] - start - bar.n)
    findings.set_damage(list(store.stats.skipped.values()))
    damage_texts = {str(place) for place in findings.damage}
    for problem in store.problems:
        if problem not in damage_texts:
            findings.error("commit log", problem)
    records = LogRecords(
        offset=np.asarray(parts["commitLogOffset"], dtype=np.int64),
        size=np.asarray(parts["storeSize"], dtype=np.int64),
        topic=parts["topic"],
        queue_id=parts["queueId"],
        queue_offset=parts["queueOffset"],
        sys_flag=parts["sysFlag"],
        tags=parts["tags"],
        uniq_key=parts["uniqKey"],
        keys=parts["keys"],
        store_ms=parts["storeTimestamp"],
        dispatch=_multi_dispatch(store, np.asarray(parts["commitLogOffset"], dtype=np.int64),
                                 parts["properties"]),
    )
    _check_contiguity(store, records, findings)
    _check_tail(store, findings)
    findings.counts["records"] = len(records.offset)
    findings.counts["log bytes"] = end - start
    return records


def _multi_dispatch(store: Store, offsets: np.ndarray, rows: list[int]) -> dict[int, tuple[str, str]]:
    """(INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET) of the given rows, read again by offset."""
    if not rows:
        return {}
    batch = store.read_offsets(offsets[rows].tolist(), ["properties"])
    out = {}
    for row, props in zip(rows, batch.column("properties").to_pylist(), strict=True):
        values = dict(props or ())
        out[row] = (values[PROPERTY_INNER_MULTI_DISPATCH], values.get(PROPERTY_INNER_MULTI_QUEUE_OFFSET, ""))
    return out


def _check_contiguity(store: Store, records: LogRecords, findings: Findings) -> None:
    """Each record starts where the previous one ended, or at a segment start after a BLANK; in a
    DLedger log (§2.13) after the previous one's end and its own entry header (`lead`)."""
    offsets, sizes, lead = records.offset, records.size, store.log.lead
    if not len(offsets):
        return
    if offsets[0] != store.min_offset + lead:
        findings.error("commit log",
                       f"first record at {offsets[0]}, not at the log start {store.min_offset + lead}")
    expected = offsets[:-1] + sizes[:-1] + lead
    segment = store.segment_size
    bad = np.flatnonzero(
        (offsets[1:] != expected) & ((offsets[1:] % segment != lead) | (offsets[1:] < expected))
    )
    for i in bad.tolist():
        if not findings.follows_from_damage(int(expected[i]), "gap in the record sequence"):
            findings.error("commit log",
                           f"record at {offsets[i]} (size {sizes[i]}) is followed by one at {offsets[i + 1]}")


def _check_tail(store: Store, findings: Findings) -> None:
    """What follows the valid end inside its segment: zeros (clean), or a torn or corrupt record; and
    the valid records past it (`CommitLog.after_end`), expected after a crash, damage otherwise."""
    after = store.log.after_end()
    if after.records:
        (findings.warning if findings.crashed else findings.error)("commit log", after.describe())
    end = store.log_end
    if end.segment is None or end.offset >= end.segment.end_offset:
        return
    position = end.offset - end.segment.base_offset
    buf = store.log.read(end.segment, position, min(end.segment.size - position, 1 << 22))
    if not np.any(buf[:4096]):
        return
    structurally_whole = check_record(buf, store.log.lead, check_crc=False).kind == "record"
    if structurally_whole and not findings.crashed:
        findings.error("commit log", f"record at the log end {end.offset} fails its CRC check: {end.reason}")
    elif findings.crashed:
        findings.warning("commit log", f"torn tail after the log end {end.offset} (crash): {end.reason}")
    else:
        findings.warning("commit log", f"non-zero bytes after the log end {end.offset}: {end.reason}")


def _expected_units(
    store: Store, records: LogRecords, delay_levels: dict[int, int]
) -> dict[tuple[str, int], dict[int, tuple[int, int, int]]]:
    """(topic, queueId) -> queueOffset -> (phy, size, tagsCode) for every NOT/COMMIT record (§4.1)."""
    schedule_rows = [i for i, t in enumerate(records.topic) if t == SCHEDULE_TOPIC]
    schedule_props: dict[int, dict[str, str]] = {}
    if schedule_rows:
        batch = store.read_offsets(records.offset[schedule_rows].tolist(), ["commitLogOffset", "properties"])
        for offset, props in zip(
            batch.column("commitLogOffset").to_pylist(), batch.column("properties").to_pylist(), strict=True
        ):
            schedule_props[offset] = dict(props or ())
    codes: dict[str | None, int] = {}
    expected: dict[tuple[str, int], dict[int, tuple[int, int, int]]] = {}
    for i, phy in enumerate(records.offset.tolist()):
        if records.sys_flag[i] & SYSFLAG_TRANSACTION_MASK not in QUEUED_TRANSACTION_TYPES:
            continue
        topic = records.topic[i]
        if topic == SCHEDULE_TOPIC:
            code = record_tags_code(topic, schedule_props.get(phy, {}), records.store_ms[i], delay_levels)
        else:
            tags = records.tags[i]
            code = codes.get(tags)
            if code is None:
                code = codes[tags] = tags_code(tags)
        unit = (phy, int(records.size[i]), code)
        expected.setdefault((topic, records.queue_id[i]), {})[records.queue_offset[i]] = unit
        if i in records.dispatch and not topic.startswith(MULTI_DISPATCH_SKIPPED):
            for queue, offset in dispatched_queues(*records.dispatch[i], records.queue_id[i]):
                expected.setdefault(queue, {})[offset] = unit
    return expected


def check_consume_queues(
    store: Store, records: LogRecords, findings: Findings, delay_levels: dict[int, int]
) -> None:
    expected = _expected_units(store, records, delay_levels)
    queues = {(t, q) for t in store.topics() for q in store.queue_ids(t)} | set(expected)
    units_checked = 0
    for topic, queue_id in sorted(queues):
        name = f"{topic}/{queue_id}"
        wanted = expected.get((topic, queue_id), {})
        ext = store.consume_queue_ext(topic, queue_id)
        seen = set()
        for queue_offset, phy, size, code in _stored_units(store, topic, queue_id):
            if phy < 0 or size <= 0:
                findings.error("consume queues", f"{name} offset {queue_offset}: unit ({phy}, {size}, "
                               f"{code}) is invalid and valid units follow it (damage.md §2)")
                continue
            if phy < store.min_offset:
                continue
            units_checked += 1
            if is_ext_address(code):
                found = ext.unit(code)
                if found is None:
                    findings.error("consume queues", f"{name} offset {queue_offset}: tagsCode {code} is an "
                                   "ext address that no consumequeue_ext unit holds")
                    continue
                code = found[0]
            if phy >= store.max_offset:
                findings.past_end(
                    "consume queues", f"{name} offset {queue_offset}: unit points at {phy}, past the log end"
                )
                continue
            seen.add(queue_offset)
            want = wanted.get(queue_offset)
            if want is None and findings.follows_from_damage(phy, "consume-queue units"):
                continue
            if want is None:
                findings.error(
                    "consume queues",
                    f"{name} offset {queue_offset}: unit ({phy}, {size}, {code}) "
                    "has no NOT/COMMIT record with that topic, queue and offset",
                )
            elif want != (phy, size, code):
                findings.error(
                    "consume queues",
                    f"{name} offset {queue_offset}: unit (phy, size, tagsCode) = "
                    f"{(phy, size, code)}, the record says {want}",
                )
        for queue_offset, want in wanted.items():
            if queue_offset not in seen:
                findings.error(
                    "consume queues", f"{name}: record at {want[0]} (queue offset {queue_offset}) has no unit"
                )
    findings.counts["queues"] = len(queues)
    findings.counts["units"] = units_checked


def _stored_units(store: Store, topic: str, queue_id: int) -> list[tuple[int, int, int, int]]:
    """(queue offset, phy, size, tagsCode) of every unit recovery keeps, fillers left out (§4.3; a
    BatchConsumeQueue's by msgBaseOffset, §4.5; a RocksDB queue's from its min to its max entry, §4.7)."""
    queue = store.consume_queue(topic, queue_id)
    if isinstance(queue, BatchConsumeQueue):
        batch = queue.stored_units()
        return list(zip(batch["base"].tolist(), batch["phy"].tolist(), batch["size"].tolist(),
                        batch["tags_code"].tolist(), strict=True))
    first, units = queue.stored_units()
    keep = np.flatnonzero(~is_filler(units))
    return list(zip((first + keep).tolist(), units["phy"][keep].tolist(), units["size"][keep].tolist(),
                    units["tags_code"][keep].tolist(), strict=True))


def _indexed_pairs(records: LogRecords, begin: int,
                   end: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(keyHash, phy) for every key the broker indexes of the records in [begin, end], and separately
    for the `topic#T#<TAGS>` entry of every tagged one, which only newer 5.x releases write (§5.4)."""
    pairs, tag_pairs = [], []
    for i, phy in enumerate(records.offset.tolist()):
        if phy < begin or phy > end or records.sys_flag[i] & SYSFLAG_TRANSACTION_MASK == TRANSACTION_ROLLBACK:
            continue
        topic = records.topic[i]
        if records.uniq_key[i] is not None:
            pairs.append((index_key_hash(index_key(topic, records.uniq_key[i])), phy))
        pairs.extend((index_key_hash(index_key(topic, key)), phy) for key in records.keys[i] or ())
        if records.tags[i]:
            tag_pairs.append((index_key_hash(index_key(topic, TAG_INDEX_PREFIX + records.tags[i])), phy))
    return pairs, tag_pairs


def _reachable_entries(view: IndexFileView, data: bytes, findings: Findings, name: str) -> np.ndarray:
    """Mask of entries reachable from their own slot by walking the chain (§5.6)."""
    entries = view.entries()
    count = len(entries)
    reached = np.zeros(count + 1, dtype=bool)
    prev = entries["prev"].astype(np.int64).tolist()
    slot_of = (entries["key_hash"].astype(np.int64) % view.hash_slots).tolist()
    slots = np.frombuffer(data, dtype=">i4", count=view.hash_slots, offset=INDEX_HEADER_SIZE)
    for slot in np.flatnonzero(slots).tolist():
        number = int(slots[slot])
        while 0 < number <= count and not reached[number]:
            if slot_of[number - 1] != slot:
                findings.error(
                    "index",
                    f"{name}: entry {number} is chained from slot {slot} but hashes to "
                    f"slot {slot_of[number - 1]}",
                )
                break
            reached[number] = True
            number = prev[number - 1]
    return reached[1:]


def check_index(store: Store, records: LogRecords, findings: Findings, args: argparse.Namespace) -> None:
    actual: list[tuple[int, int]] = []
    begin, end = None, -1
    usable = [info for info in store.index_files if info.problem is None and info.geometry]
    for info in store.index_files:
        if info.problem is not None:
            findings.error("index", f"{info.path}: {info.problem}")
    entries_total = 0
    with progress(args, len(usable), "index files", unit="file") as bar:
        for info in usable:
            data = store.fs.read_bytes(info.path)
            view = IndexFileView(data, *info.geometry)
            entries = view.entries()
            entries_total += len(entries)
            reached = _reachable_entries(view, data, findings, info.name)
            for number in np.flatnonzero(~reached)[:_SHOWN_PER_CHECK].tolist():
                findings.error("index", f"{info.name}: entry {number + 1} is not reachable from its slot")
            for key_hash, phy in zip(
                entries["key_hash"][reached].tolist(), entries["phy"][reached].tolist(), strict=True
            ):
                if phy >= store.max_offset:
                    findings.past_end("index", f"{info.name}: entry for {phy} points past the log end")
                elif phy >= store.min_offset:
                    actual.append((key_hash, phy))
            if view.header.entry_count:
                begin = view.header.begin_phy_offset if begin is None else begin
                end = max(end, view.header.end_phy_offset)
            bar.update(1)
    findings.counts["index files"] = len(store.index_files)
    findings.counts["index entries"] = entries_total
    begin = store.min_offset if begin is None else max(begin, store.min_offset)
    expected, tag_pairs = _indexed_pairs(records, begin, end)
    if Counter(tag_pairs) & (Counter(actual) - Counter(expected)):
        expected += tag_pairs  # the store's broker writes tag entries: every tagged record has one
        findings.counts["indexed tags"] = len(tag_pairs)
    findings.counts["indexed keys"] = len(expected)
    not_indexed = int(np.count_nonzero(records.offset > end))
    if not_indexed:
        findings.warning("index", f"{not_indexed} records after the index end {end} are not indexed yet")
    if sorted(actual) == sorted(expected):
        return
    have, want = Counter(actual), Counter(expected)
    for (key_hash, phy), n in (want - have).items():
        findings.error("index", f"record at {phy}: {n} indexed key(s) with hash {key_hash} have no entry")
    for (key_hash, phy), n in (have - want).items():
        if not findings.follows_from_damage(phy, "index entries", n):
            findings.error(
                "index", f"{n} entry(ies) with hash {key_hash} point at {phy}, whose record has no such key"
            )


def verify(store: Store, args: argparse.Namespace) -> Findings:
    findings = Findings(crashed=store.abort_present)
    records = check_commit_log(store, findings, args)
    check_consume_queues(store, records, findings, getattr(args, "delay_levels", DEFAULT_DELAY_LEVEL_TABLE))
    check_index(store, records, findings, args)
    findings.report_damage()
    return findings


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        findings = verify(store, args)
    if args.json:
        print_json(
            {
                "sound": findings.sound,
                "crashed": findings.crashed,
                "counts": findings.counts,
                "errors": dict(findings.errors),
                "warnings": dict(findings.warnings),
                "errorExamples": findings.error_examples,
                "warningExamples": findings.warning_examples,
            }
        )
    else:
        print_fields("Checked", list(findings.counts.items()))
        for kind, counter, examples in (
            ("ERRORS", findings.errors, findings.error_examples),
            ("Warnings", findings.warnings, findings.warning_examples),
        ):
            for check, n in sorted(counter.items()):
                shown = examples.get(check, [])
                print_fields(f"{kind} in {check}: {n}", [(str(i + 1), text) for i, text in enumerate(shown)])
        print("store is sound" if findings.sound else "store is NOT sound")
    return 0 if findings.sound else 1
