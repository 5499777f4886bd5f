"""RocketMQ's answers about the conformance fixtures (fixtures/*/oracle.json) in comparable form.

Shared by the Store, CLI and Spark conformance tests: which fixtures exist, the row every record must
read as, and what a key / unique-key / msgId lookup must return. Oracle fields: README.md.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from rmqstore import Store

FIXTURES = Path(__file__).parent / "fixtures"
ORACLES: dict[str, dict[str, Any]] = {
    path.parent.name: json.loads(path.read_text(encoding="utf-8"))
    for path in sorted(FIXTURES.glob("*/oracle.json"))
}
MAIN = sorted(name for name, oracle in ORACLES.items() if "recordsFrom" not in oracle)
"""Fixtures with their own records and queries."""
DLEDGER = sorted(name for name in MAIN if ORACLES[name].get("dledger"))
"""Stores written by RocketMQ's DLedgerCommitLog (docs/format.md §2.13)."""
CRASH = sorted(name for name, oracle in ORACLES.items() if "recordsFrom" in oracle)
"""Copies of a running store with a torn last record; their records are those of `recordsFrom`."""
ROCKSDB = sorted(name for name, oracle in ORACLES.items() if oracle.get("storeType") == "defaultRocksDB")
"""Fixtures of RocksDBMessageStore: consume queues and consumer offsets in RocksDB (docs/format.md §4.7)."""
QUEUE_SHAPES = sorted(name for name in MAIN if "backlogs" in ORACLES[name])
"""Fixtures of the non-default queue shapes (BatchCQ, LMQ, cqext; docs/format.md §4.4-§4.6; the v2 config
storage one is an LMQ store), with RocketMQ's getMessage backlogs (test_conformance_shapes.py)."""
CONFIG_V2 = sorted(name for name in MAIN if ORACLES[name].get("configManagerVersion") == "v2")
"""Fixtures whose consumer offsets are in the v2 config storage `config/rdb/` (docs/format.md §4.8)."""
FILE_QUEUES = [name for name in MAIN if name not in ROCKSDB]
"""MAIN without the RocksDB fixtures, for Spark reads that do not go through the consume queues (index,
time and msgId paths: the same code on the same kind of commit log, not repeated for CI time)."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Host = tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]


def store_dir(name: str) -> Path:
    return FIXTURES / name / "store"


def store_hashes(name: str) -> dict[str, str]:
    """SHA-256 of every file of the fixture's store by relative path: reading must leave them as they are."""
    root = store_dir(name)
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def getmessage_rows(name: str, topics: set[str] | None = None) -> list[tuple]:
    """RocketMQ's getMessage answers from the committed offsets (`backlogs`), as sorted rows (commitLogOffset,
    topic, queueId, queueOffset): the record's own topic and queue, whichever queue it was read through
    (§4.6)."""
    records = {r["commitLogOffset"]: r for r in ORACLES[name]["records"]}
    return sorted((phy, records[phy]["topic"], records[phy]["queueId"], queue_offset)
                  for b in ORACLES[name]["backlogs"] if topics is None or b["topic"] in topics
                  for phy, queue_offset in zip(b["getMessage"], b["getMessageQueueOffsets"], strict=True))


def index_geometry(name: str) -> tuple[int, int]:
    """(maxHashSlotNum, maxIndexNum) the fixture's broker used."""
    config = ORACLES[name]["config"]
    return config["maxHashSlotNum"], config["maxIndexNum"]


def open_store(name: str) -> Store:
    return Store.open(store_dir(name), index_geometry=index_geometry(name))


def host(text: str) -> Host:
    """'ip:port' or '[v6]:port' -> comparable (address, port); Java prints IPv6 uncompressed."""
    addr, _, port = text.rpartition(":")
    return ipaddress.ip_address(addr.strip("[]")), int(port)


def millis(value: datetime) -> int:
    return (value - EPOCH) // timedelta(milliseconds=1)


def keys_tokens(key: str | None) -> list[str] | None:
    """The `keys` column for a KEYS property: split on " ", empty tokens dropped (null without KEYS)."""
    return None if key is None else [token for token in key.split(" ") if token]


def expected_row(record: dict[str, Any]) -> dict[str, Any]:
    """A record as MessageDecoder read it, keyed by table column, hosts parsed, body bytes, times in ms."""
    return {
        "topic": record["topic"],
        "queueId": record["queueId"],
        "queueOffset": record["queueOffset"],
        "commitLogOffset": record["commitLogOffset"],
        "storeSize": record["storeSize"],
        "msgId": record["msgId"],
        "uniqKey": record["uniqKey"],
        "key": record["key"],
        "keys": keys_tokens(record["key"]),
        "tags": record["tags"],
        "body": base64.b64decode(record["body"]),
        "bodyCrc": record["bodyCrc"],
        "flag": record["flag"],
        "sysFlag": record["sysFlag"],
        "bornTimestamp": record["bornTimestamp"],
        "storeTimestamp": record["storeTimestamp"],
        "bornHost": host(record["bornHost"]),
        "storeHost": host(record["storeHost"]),
        "reconsumeTimes": record["reconsumeTimes"],
        "preparedTransactionOffset": record["preparedTransactionOffset"],
        "properties": record["properties"],
    }


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """An Arrow table row (`to_pylist()`: tz-aware timestamps, map as pairs) in `expected_row` form."""
    return {
        **row,
        "bornTimestamp": millis(row["bornTimestamp"]),
        "storeTimestamp": millis(row["storeTimestamp"]),
        "bornHost": host(row["bornHost"]),
        "storeHost": host(row["storeHost"]),
        "properties": dict(row["properties"]),
    }


def records(name: str) -> list[dict[str, Any]]:
    """Every record a reader must return, in commit-log order: a crash copy's stop at RocketMQ's
    recovered valid end (its torn last record and anything after it are not part of the log)."""
    oracle = ORACLES[name]
    if "recordsFrom" not in oracle:
        return oracle["records"]
    end = oracle["recoveredMaxPhyOffset"]
    return [r for r in ORACLES[oracle["recordsFrom"]]["records"] if r["commitLogOffset"] < end]


def time_windows(name: str) -> list[tuple[int, int]]:
    """storeTimestamp windows [lo, hi] (ms, inclusive) to select records by: each record stored earlier
    than the record before it (the broker's clock stepped back; RocketMQ stores whatever its clock says)
    alone, and the middle third of the log's time span."""
    times = [r["storeTimestamp"] for r in records(name)]
    windows = [(t, t) for previous, t in pairwise(times) if t < previous]
    first, last = min(times), max(times)
    return [*windows, (first + (last - first) // 3, first + 2 * (last - first) // 3)]


def stored_within(name: str, window: tuple[int, int]) -> list[int]:
    """commitLogOffsets of the records whose storeTimestamp lies in `window`, in log order."""
    lo, hi = window
    return [r["commitLogOffset"] for r in records(name) if lo <= r["storeTimestamp"] <= hi]


@dataclass(frozen=True)
class IndexQuery:
    """One key (a KEYS token) or unique-key question and RocketMQ's answers to it.

    `capped`: the broker query (maxMsgsNumBatch 64 hash candidates for keys, defaultQueryMaxNum 32
    for unique keys) hit its cap. `answered`: what RocketMQ returns: the capped broker answer
    filtered like the client (topic equal and key among KEYS / UNIQ_KEY equal). `complete`: the same
    with the cap raised (sorted, duplicates from repeated index entries like KEYS "dup dup" removed).
    `admin`: the answer through DefaultMQAdminExt over the network, where the fixture recorded one.
    `table`: the rows a table filter selects (topic equal and key among the KEYS tokens / UNIQ_KEY
    equal): `complete` plus the matching records RocketMQ never indexes (`not_indexed`).
    """

    kind: str
    topic: str
    key: str
    capped: bool
    answered: frozenset[int]
    complete: tuple[int, ...]
    admin: frozenset[int] | None
    table: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"{self.kind} {self.topic}#{self.key!r}"

    def check(self, found: Iterable[int]) -> None:
        """A lookup's offsets for this question (Store API, CLI): the table's rows (`check_table`), which
        are RocketMQ's answer plus the ROLLBACK records RocketMQ never indexes, where RocketMQ is not
        capped, and a superset of its answer where it is."""
        found = sorted(found)
        assert found == sorted(set(found)), f"{self.label}: repeated offsets {found}"
        self.check_table(found)
        rollback = set(self.table) - set(self.complete)
        rocketmq = [self.answered] + ([self.admin] if self.admin is not None else [])
        for answer in rocketmq:
            if self.capped:
                assert set(found) >= answer, self.label
            else:
                assert set(found) == answer | rollback, self.label

    def check_table(self, found: Iterable[int]) -> None:
        """A table filter's rows for this question (every record, indexed or not)."""
        found = sorted(found)
        missing, extra = sorted(set(self.table) - set(found)), sorted(set(found) - set(self.table))
        assert found == list(self.table), f"{self.label}: missing {missing}, unexpected {extra}"


TRANSACTION_TYPE_MASK = 0x0C
TRANSACTION_ROLLBACK_TYPE = 0x0C


def not_indexed(record: dict[str, Any]) -> bool:
    """IndexService.buildIndex (4.9 and 5.x) returns before indexing TRANSACTION_ROLLBACK_TYPE records,
    so RocketMQ's key and unique-key queries never return them, while they are rows of the table."""
    return record["sysFlag"] & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE


def _matches(record: dict[str, Any], kind: str, topic: str, key: str) -> bool:
    if record["topic"] != topic:
        return False
    return key in (keys_tokens(record["key"]) or []) if kind == "key" else record["uniqKey"] == key


def index_queries(name: str) -> list[IndexQuery]:
    """Every key and unique-key question the fixture's oracle asked RocketMQ."""
    oracle = ORACLES[name]
    unindexed = [r for r in records(name) if not_indexed(r)]
    admin_sections = oracle.get("admin", {})
    admin = {
        (a["kind"], a["topic"], a["key"]): _admin_offsets(a)
        for section in ("keyQueries", "uniqKeyQueries")
        for a in admin_sections.get(section, [])
    }
    return [
        IndexQuery(
            kind=q["kind"],
            topic=q["topic"],
            key=q["key"],
            capped=q["capped"],
            answered=frozenset(q["queryMessage"]) & frozenset(q["matchesAll"]),
            complete=tuple(sorted(set(q["matchesAll"]))),
            admin=admin.get((q["kind"], q["topic"], q["key"])),
            table=tuple(sorted(set(q["matchesAll"]) | {
                r["commitLogOffset"] for r in unindexed if _matches(r, q["kind"], q["topic"], q["key"])
            })),
        )
        for q in oracle["queries"]
    ]


NO_MESSAGE = 208
"""ResponseCode.NO_MESSAGE: the admin client's "found nothing"; other codes (e.g. 17 TOPIC_NOT_EXIST: the
name server had no route for the topic) mean the admin path could not ask. The broker generator waits
for a route to every topic it asks about, SCHEDULE_TOPIC_XXXX included (tests/conformance/README.md)."""


def _admin_offsets(answer: dict[str, Any]) -> frozenset[int] | None:
    return frozenset(answer["offsets"]) if answer.get("error") in (None, NO_MESSAGE) else None


@dataclass(frozen=True)
class MsgIdQuery:
    """A msgId probe: an offsetMsgId RocketMQ found at `offset` (lookMessageByOffset), or an id that
    names no record (`offset` None). `admin`: mqadmin queryMsgById's answer (viewMessage) where
    recorded: by offset, else the first record whose UNIQ_KEY equals the id."""

    msg_id: str
    offset: int | None
    admin: frozenset[int] | None


def msg_id_queries(name: str) -> list[MsgIdQuery]:
    oracle = ORACLES[name]
    admin = {a["msgId"]: _admin_offsets(a) for a in oracle.get("admin", {}).get("msgIdQueries", [])}
    return [
        MsgIdQuery(
            msg_id=q["msgId"],
            offset=q["offset"] if q.get("found") else None,
            admin=admin.get(q["msgId"]),
        )
        for q in oracle["msgIdQueries"]
    ]


def offsets_with_uniq_key(name: str, uniq_key: str) -> list[int]:
    """Indexed records whose UNIQ_KEY equals `uniq_key`, any topic: what a unique-key lookup (mqadmin's
    fallback for an id that is no offsetMsgId) can find."""
    return [r["commitLogOffset"] for r in records(name) if r["uniqKey"] == uniq_key and not not_indexed(r)]
