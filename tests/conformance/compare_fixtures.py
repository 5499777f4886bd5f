"""Compare regenerated conformance fixtures with the committed ones.

Usage: python3 compare_fixtures.py COMMITTED_DIR GENERATED_DIR

Fixed-clock fixtures (written by DefaultMessageStore with the generator's clock) are byte-equal for
everything RocketMQ writes deterministically: commit log, consume queues, checkpoint, index file
contents, oracle.json. Compared differently because RocketMQ derives them from the wall clock or the
process:
  * index/ file names (creation time, ms) -> the contents are compared in name order;
  * abort (5.x writes the PID), abort.bak, lock, rocksdbstore/IDENTITY (random id of the 5.x
    RocksDB the store creates), *.bak -> presence only;
  * config/*.json -> parsed (fastjson bare int keys quoted), "dataVersion" dropped;
  * checkpoint -> logicsMsgTimestamp (bytes 8..16) and 5.5's logicsPhysicalOffset (bytes 40..48)
    skipped: 5.x records them when its periodic consume-queue flush happens to run (§6.1);
  * a crash copy's checkpoint (oracle has "recordsFrom") -> presence only: the file holds whatever the
    last StoreCheckpoint.flush() of the running store wrote, and those flushes come from background
    threads (FlushIndexFileThread after an index roll-over, the consume-queue flush service's first
    "thorough" flush about a second after start) whose timing against the puts varies with machine load.

RocksDB databases of a fixed-clock fixture (oracle.json "rocksdb" lists them relative to the store, e.g.
consumequeue/ and config/consumerOffsets/ of a RocksDBMessageStore) are not byte-reproducible (file
numbers, flush timing, random ids): they are compared by content, every (column family, key, value)
read back read-only, with the "timestamp" of a JSON value (dataVersion) dropped, and so the timestamp of
a v2 config storage's data-version record (config/rdb/, docs/format.md §4.8: state-machine version, timestamp,
counter).

Wall-clock fixtures (oracle.json has "wallClock": true: the broker fixture, written by a real broker
and producer over loopback) differ run to run in times, ports and client ids, and - because the
UNIQ_KEY is 32 or 56 hex characters depending on whether the client's address is IPv4 or IPv6 - in
record sizes and hence every physical offset. They are compared semantically (WALL_CLOCK_RULES).
The life fixture (oracle.json "lifecycle": true: traced producers and consumers, retries, timers and
transactions running concurrently) also differs in the order of its records and in how the trace
dispatchers batched trace contexts into trace-topic records: it is compared as multisets (LIFE_RULES).
Prints one line per difference and exits 1 if there is any.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

PRESENCE_ONLY = {"abort", "abort.bak", "lock", "IDENTITY"}
CHECKPOINT_TIMING_FIELDS = (slice(8, 16), slice(40, 48))
BARE_INT_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")

WALL_CLOCK_RULES = """\
Wall-clock fixture rules (records are identified by their ordinal n in commit-log order; a UNIQ_KEY by
"uniq#n", n = first record carrying it; an offsetMsgId by "msg#n"):
  * records: same count; per record equal topic, queueId, queueOffset, magic, key, tags, body,
    storedBodyLength, bodyCrc, flag, sysFlag, reconsumeTimes, preparedTransactionOffset, uniqKey (as
    uniq#n), born/store host address without port, properties with UNIQ_KEY as uniq#n; not compared:
    commitLogOffset, storeSize, msgId, bornTimestamp, storeTimestamp, ports;
  * minPhyOffset; maxPhyOffset == recoveredMaxPhyOffset == end of the last record (a flag);
    abortPresent, config, queues (min/max queue offsets), consumerOffsets: equal; blanks: not compared;
  * queries / admin: every answer with offsets as record ordinals in RocketMQ's order, keys as above;
    capped, maxNum, error codes equal; msgId probes that name no record: only whether one was found;
  * files: same relative paths outside commitlog/ and index/ (segment count follows record sizes) and
    other than *.bak (the broker's ConfigManager writes X.bak from its second persist of X on, and how
    often its timers persist before shutdown varies run to run), same number of index files;
    config/*.json parsed without "dataVersion"; consume queue files,
    checkpoint, commit log and index contents are not byte-compared (offsets, delivery times).
"""

LIFE_RULES = """\
Life fixture rules (oracle.json "lifecycle": true; a record outside the trace topic is named by its
consume-queue position "topic/queueId/queueOffset", the same in every run because each send and each
broker-side delivery is awaited before the next; a UNIQ_KEY by "uniq:<KEYS>" of the first such record
carrying it; trace-topic records, whose count and order follow the trace dispatchers' batching, only
through the trace contexts they hold):
  * records outside the trace topic: by name, every field but commitLogOffset, storeSize, msgId, times
    and ports; preparedTransactionOffset and ORIGIN_MESSAGE_ID as record names; timer times
    (TIMER_*_MS) not compared;
  * traceRecords: the multiset of contexts (traceType, groupName, success, regionId, and per bean topic,
    tags, keys, msgId, offsetMsgId as a record name, retryTimes, bodyLength, msgType, transactionState,
    fromTransactionCheck, store host address); not compared: times, costTime, requestId, contextCode,
    clientHost, the carrying record;
  * sent, messageTrack (trackType per group), consumeStats (brokerOffset, consumerOffset, pullOffset per
    queue; not consumeTps, lastTimestamp), consumerOffsets, queues (but the trace topic's), config,
    minPhyOffset, abortPresent: equal; queries and msgIdQueries outside the trace topic: matches as
    record names;
  * files: as WALL_CLOCK_RULES, without the trace topic's consume queue and the index file count (trace
    records carry every traced message's id as a key).
"""
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TIMER_TIME_PROPERTIES = {"TIMER_DELIVER_MS", "TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS"}


def _fastjson(text: str) -> Any:
    return json.loads(BARE_INT_KEY.sub(r'\1"\2"\3', text))


def _without_data_version(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _without_data_version(v) for k, v in doc.items() if k != "dataVersion"}
    if isinstance(doc, list):
        return [_without_data_version(v) for v in doc]
    return doc


def _config_json(path: Path) -> Any:
    return _without_data_version(_fastjson(path.read_text(encoding="utf-8")))


def _checkpoint_without_timing_fields(path: Path) -> bytes:
    data = bytearray(path.read_bytes())
    for field in CHECKPOINT_TIMING_FIELDS:
        data[field] = bytes(8)
    return bytes(data)


def _files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


def _index_files(files: dict[str, Path]) -> dict[str, list[str]]:
    """Index files grouped by their index/ directory, in name (= creation) order."""
    groups: dict[str, list[str]] = {}
    for name in sorted(files):
        directory, _, _ = name.rpartition("/")
        if directory.endswith("/index") or directory == "index":
            groups.setdefault(directory, []).append(name)
    return groups


def _is_config_json(name: str) -> bool:
    return "/config/" in f"/{name}" and name.endswith(".json")


def _fixtures_whose_oracle_has(root: Path, field: str) -> set[str]:
    return set(_oracle_field(root, field))


def _oracle_field(root: Path, field: str) -> dict[str, Any]:
    """Fixture name -> the value of `field` in its oracle.json, for the fixtures where it is set."""
    found = {}
    for oracle in root.glob("*/oracle.json"):
        value = json.loads(oracle.read_text(encoding="utf-8")).get(field)
        if value:
            found[oracle.parent.name] = value
    return found


DATA_VERSION_KEY = b"data_version"
"""Ends the key of a v2 config storage table's data-version record; its value is 3 longs, the middle one the
wall clock."""


def _without_timestamp(key: bytes, value: bytes) -> Any:
    """A RocksDB value without its wall clock: a JSON value's "timestamp" fields (a dataVersion), a v2
    data-version record's timestamp; other bytes as they are."""
    if key.endswith(DATA_VERSION_KEY) and len(value) == 24:
        return value[:8] + value[16:]
    try:
        doc = json.loads(value)
    except ValueError:
        return value
    return {k: v for k, v in doc.items() if k != "timestamp"} if isinstance(doc, dict) else doc


def rocksdb_content(path: Path) -> dict[tuple[str, bytes], Any]:
    """(column family, key) -> value of every entry of a RocksDB directory, opened read-only."""
    from rmqstore.store.rocksdb import ReadOnlyRocksDB

    db = ReadOnlyRocksDB(str(path))
    try:
        return {(family, key): _without_timestamp(key, value)
                for family in sorted(db.families) for key, value in db.items(family)}
    finally:
        db.close()


def compare_rocksdb(committed: Path, generated: Path, databases: dict[str, list[str]]) -> list[str]:
    """Differences in content between the RocksDB directories `databases` names (fixture -> store paths)."""
    problems = []
    for name, paths in sorted(databases.items()):
        for rel in paths:
            old, new = committed / name / "store" / rel, generated / name / "store" / rel
            if not new.is_dir():
                problems.append(f"missing in regenerated: {name}/store/{rel}/ (RocksDB)")
                continue
            a, b = rocksdb_content(old), rocksdb_content(new)
            for key in sorted(a.keys() ^ b.keys()):
                problems.append(f"RocksDB {name}/store/{rel}: entry only in one tree: {key}")
            problems += [f"RocksDB {name}/store/{rel}: value differs: {key}"
                         for key in sorted(a.keys() & b.keys()) if a[key] != b[key]]
    return problems


def compare_tree(committed: Path, generated: Path) -> list[str]:
    """Differences between two fixture trees, as human-readable lines."""
    wall_clock = {
        name for root in (committed, generated) for name in _fixtures_whose_oracle_has(root, "wallClock")
    }
    crash_copies = _fixtures_whose_oracle_has(committed, "recordsFrom")
    databases = _oracle_field(committed, "rocksdb")
    problems = []
    for name in sorted(wall_clock):
        problems += compare_wall_clock(committed / name, generated / name)
    problems += compare_rocksdb(committed, generated, databases)
    in_rocksdb = tuple(f"{name}/store/{rel}/" for name, paths in databases.items() for rel in paths)

    def fixed_clock(files: dict[str, Path]) -> dict[str, Path]:
        return {k: v for k, v in files.items()
                if k.split("/", 1)[0] not in wall_clock and not k.startswith(in_rocksdb)}

    old, new = fixed_clock(_files(committed)), fixed_clock(_files(generated))
    old_index, new_index = _index_files(old), _index_files(new)
    for directory in sorted(old_index.keys() | new_index.keys()):
        a, b = old_index.get(directory, []), new_index.get(directory, [])
        if len(a) != len(b):
            problems.append(f"{directory}: index file count {len(a)} != {len(b)}")
        for x, y in zip(a, b, strict=False):
            if old[x].read_bytes() != new[y].read_bytes():
                problems.append(f"index file content differs: {x} vs {y}")
    old_index_names = {name for names in old_index.values() for name in names}
    new_index_names = {name for names in new_index.values() for name in names}
    plain_old = {k for k in old if k not in old_index_names}
    plain_new = {k for k in new if k not in new_index_names}
    for missing in sorted(plain_old - plain_new):
        problems.append(f"missing in regenerated: {missing}")
    for extra in sorted(plain_new - plain_old):
        problems.append(f"not in committed fixtures: {extra}")
    for name in sorted(plain_old & plain_new):
        base = name.rsplit("/", 1)[-1]
        if base in PRESENCE_ONLY or base.endswith(".bak"):
            continue
        if base == "checkpoint" and name.split("/", 1)[0] in crash_copies:
            continue
        if _is_config_json(name):
            if _config_json(old[name]) != _config_json(new[name]):
                problems.append(f"config differs: {name}")
        elif base == "checkpoint":
            if _checkpoint_without_timing_fields(old[name]) != _checkpoint_without_timing_fields(new[name]):
                problems.append(f"checkpoint differs beyond its flush-timing fields: {name}")
        elif old[name].read_bytes() != new[name].read_bytes():
            problems.append(f"bytes differ: {name}")
    return problems


class _Refs:
    """Run-independent names for offsets, UNIQ_KEYs and offsetMsgIds of one wall-clock oracle."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.ordinal = {r["commitLogOffset"]: n for n, r in enumerate(records)}
        self.msg = {r["msgId"]: f"msg#{n}" for n, r in enumerate(records)}
        self.uniq: dict[str, str] = {}
        for n, r in enumerate(records):
            if r["uniqKey"] is not None:
                self.uniq.setdefault(r["uniqKey"], f"uniq#{n}")

    def offsets(self, offsets: list[int]) -> list[int | str]:
        return [self.ordinal.get(o, f"not a record start: {o}") for o in offsets]

    def key(self, kind: str, key: str) -> str:
        return self.uniq.get(key, f"unknown uniq key {key}") if kind == "uniqKey" else key

    def any_id(self, value: str) -> str:
        return self.msg.get(value) or self.uniq.get(value) or value


def _host_address(host: str) -> str:
    return host.rpartition(":")[0]


def _record(record: dict[str, Any], refs: _Refs) -> dict[str, Any]:
    dropped = {"commitLogOffset", "storeSize", "msgId", "bornTimestamp", "storeTimestamp"}
    out = {k: v for k, v in record.items() if k not in dropped}
    out["uniqKey"] = None if record["uniqKey"] is None else refs.uniq[record["uniqKey"]]
    out["bornHost"] = _host_address(record["bornHost"])
    out["storeHost"] = _host_address(record["storeHost"])
    properties = record["properties"]
    out["properties"] = {k: (refs.any_id(v) if k == "UNIQ_KEY" else v) for k, v in properties.items()}
    return out


def _store_query(query: dict[str, Any], refs: _Refs) -> dict[str, Any]:
    answers = ("queryMessage", "queryOffsetCapped", "queryMessageAll", "matchesAll")
    out = {k: (refs.offsets(v) if k in answers else v) for k, v in query.items()}
    out["key"] = refs.key(query["kind"], query["key"])
    return out


def _msg_id_query(query: dict[str, Any], refs: _Refs) -> dict[str, Any]:
    if query["msgId"] not in refs.msg:  # not an offsetMsgId of this store: its decoding depends on the run
        return {"msgId": refs.any_id(query["msgId"]), "found": bool(query.get("found"))}
    return {
        "msgId": refs.msg[query["msgId"]],
        "offset": refs.offsets([query["offset"]])[0],
        "found": query.get("found"),
        "error": query.get("error"),
    }


def _admin_answer(answer: dict[str, Any], refs: _Refs) -> dict[str, Any]:
    out = {**answer, "offsets": refs.offsets(answer["offsets"])}
    if answer["kind"] == "msgId":
        out["msgId"] = refs.any_id(answer["msgId"])
    else:
        out["key"] = refs.key(answer["kind"], answer["key"])
    return out


def semantic_oracle(oracle: dict[str, Any]) -> dict[str, Any]:
    """The run-independent content of a wall-clock oracle (WALL_CLOCK_RULES)."""
    records = oracle["records"]
    refs = _Refs(records)
    last_end = records[-1]["commitLogOffset"] + records[-1]["storeSize"] if records else 0
    same = ("fixture", "rocketmqVersion", "writtenBy", "config", "minPhyOffset", "queues")
    return {
        **{k: oracle[k] for k in same},
        "recoveredToLastRecordEnd": oracle["maxPhyOffset"] == oracle["recoveredMaxPhyOffset"] == last_end,
        "abortPresent": oracle["abortPresent"],
        "consumerOffsets": oracle["consumerOffsets"],
        "records": [_record(r, refs) for r in records],
        "queries": [_store_query(q, refs) for q in oracle["queries"]],
        "msgIdQueries": [_msg_id_query(q, refs) for q in oracle["msgIdQueries"]],
        "admin": {
            section: [_admin_answer(a, refs) for a in answers] for section, answers in oracle["admin"].items()
        },
    }


class _LifeRefs:
    """Run-independent names of the life fixture's records (LIFE_RULES)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        own = sorted((r for r in records if r["topic"] != TRACE_TOPIC),
                     key=lambda r: (r["topic"], r["queueId"], r["queueOffset"]))
        self.name = {r["commitLogOffset"]: f"{r['topic']}/{r['queueId']}/{r['queueOffset']}" for r in own}
        self.msg = {r["msgId"]: self.name[r["commitLogOffset"]] for r in own}
        self.uniq: dict[str, str] = {}
        for r in own:
            if r["uniqKey"] is not None:
                self.uniq.setdefault(r["uniqKey"], f"uniq:{r['key']}")

    def value(self, value: Any) -> Any:
        return self.uniq.get(value) or self.msg.get(value) or value if isinstance(value, str) else value

    def offsets(self, offsets: list[int]) -> list[str]:
        return sorted(self.name.get(o, f"not a record outside the trace topic: {o}") for o in offsets)


def _life_record(record: dict[str, Any], refs: _LifeRefs) -> dict[str, Any]:
    dropped = {"commitLogOffset", "storeSize", "msgId", "bornTimestamp", "storeTimestamp"}
    out = {k: refs.value(v) for k, v in record.items() if k not in dropped}
    out["name"] = refs.name[record["commitLogOffset"]]
    out["preparedTransactionOffset"] = refs.name.get(record["preparedTransactionOffset"], 0)
    out["bornHost"] = _host_address(record["bornHost"])
    out["storeHost"] = _host_address(record["storeHost"])
    out["properties"] = {k: ("<time>" if k in TIMER_TIME_PROPERTIES else refs.value(v))
                         for k, v in record["properties"].items()}
    return out


def _trace_context(context: dict[str, Any], refs: _LifeRefs) -> str:
    kept = ("traceType", "groupName", "success", "regionId")
    bean_kept = ("topic", "tags", "keys", "msgId", "offsetMsgId", "retryTimes", "bodyLength", "msgType",
                 "transactionState", "fromTransactionCheck")
    beans = [{**{k: refs.value(b[k]) for k in bean_kept},
              "storeHost": b["storeHost"] and _host_address(b["storeHost"])} for b in context["traceBeans"]]
    return json.dumps({**{k: context[k] for k in kept}, "traceBeans": beans}, sort_keys=True)


def _life_msg_id_query(query: dict[str, Any], refs: _LifeRefs) -> dict[str, Any]:
    """A msgId lookup of a record by its name; a probe that names no record only by whether it was found."""
    if query["msgId"] not in refs.msg:
        return {"msgId": refs.value(query["msgId"]), "found": bool(query.get("found"))}
    return {"msgId": refs.msg[query["msgId"]], "offset": refs.offsets([query["offset"]]),
            "found": query.get("found"), "error": query.get("error")}


def semantic_life_oracle(oracle: dict[str, Any]) -> dict[str, Any]:
    """The run-independent content of the life fixture's oracle (LIFE_RULES)."""
    records = oracle["records"]
    refs = _LifeRefs(records)
    last_end = max((r["commitLogOffset"] + r["storeSize"] for r in records), default=0)
    own = sorted((r for r in records if r["topic"] != TRACE_TOPIC),
                 key=lambda r: (r["topic"], r["queueId"], r["queueOffset"]))
    same = ("fixture", "rocketmqVersion", "writtenBy", "config", "minPhyOffset", "consumerOffsets",
            "abortPresent")
    return {
        **{k: oracle[k] for k in same},
        "recoveredToLastRecordEnd": oracle["maxPhyOffset"] == oracle["recoveredMaxPhyOffset"] == last_end,
        "records": [_life_record(r, refs) for r in own],
        "queues": [q for q in oracle["queues"] if q["topic"] != TRACE_TOPIC],
        "queries": sorted(
            json.dumps({"kind": q["kind"], "topic": q["topic"], "key": refs.value(q["key"]),
                        "matchesAll": refs.offsets(q["matchesAll"])}, sort_keys=True)
            for q in oracle["queries"] if q["topic"] != TRACE_TOPIC),
        "msgIdQueries": sorted(
            json.dumps(_life_msg_id_query(q, refs), sort_keys=True)
            for q in oracle["msgIdQueries"] if q["msgId"] in refs.msg or q.get("storeHost") is None),
        "sent": [{k: refs.value(v) for k, v in s.items()} for s in oracle["sent"]],
        "messageTrack": [{k: refs.offsets([v]) if k == "commitLogOffset" else refs.value(v)
                          for k, v in t.items()} for t in oracle["messageTrack"]],
        "consumeStats": {group: [{k: q[k] for k in ("topic", "queueId", "brokerOffset", "consumerOffset",
                                                     "pullOffset")} for q in stats["queues"]]
                         for group, stats in oracle["consumeStats"].items()},
        "traceRecords": sorted(_trace_context(c, refs) for c in oracle["traceRecords"]),
    }


def _first_difference(path: str, a: Any, b: Any) -> str | None:
    """Where two JSON values first differ (for a readable report)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'regenerated' if key not in a else 'committed'}"
            found = _first_difference(f"{path}.{key}", a[key], b[key])
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(f"{path}[{i}]", x, y)
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


def compare_wall_clock(committed: Path, generated: Path) -> list[str]:
    """Differences between two runs of a wall-clock fixture (WALL_CLOCK_RULES)."""
    name = committed.name
    if not (committed / "oracle.json").is_file() or not (generated / "oracle.json").is_file():
        return [f"{name}: oracle.json missing on one side"]
    old_oracle = json.loads((committed / "oracle.json").read_text(encoding="utf-8"))
    new_oracle = json.loads((generated / "oracle.json").read_text(encoding="utf-8"))
    problems = []
    life = bool(old_oracle.get("lifecycle"))
    semantic = semantic_life_oracle if life else semantic_oracle
    difference = _first_difference(name, semantic(old_oracle), semantic(new_oracle))
    if difference:
        problems.append(f"oracle differs semantically at {difference}")

    def layout(root: Path) -> tuple[set[str], int]:
        files = _files(root)
        index = [k for k in files if k.startswith("store/index/")]
        skipped = ("store/commitlog/", *([f"store/consumequeue/{TRACE_TOPIC}/"] if life else []))
        plain = {k for k in files if k not in index and not k.startswith(skipped) and not k.endswith(".bak")}
        return plain, len(index)

    (old_plain, old_index), (new_plain, new_index) = layout(committed), layout(generated)
    if old_index != new_index and not life:
        problems.append(f"{name}: index file count {old_index} != {new_index}")
    for missing in sorted(old_plain - new_plain):
        problems.append(f"missing in regenerated: {name}/{missing}")
    for extra in sorted(new_plain - old_plain):
        problems.append(f"not in committed fixtures: {name}/{extra}")
    for rel in sorted(old_plain & new_plain):
        if _is_config_json(rel) and _config_json(committed / rel) != _config_json(generated / rel):
            problems.append(f"config differs beyond dataVersion: {name}/{rel}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        print(WALL_CLOCK_RULES)
        print(LIFE_RULES)
        return 2
    problems = compare_tree(Path(argv[1]), Path(argv[2]))
    for line in problems:
        print(line)
    print("fixtures match" if not problems else f"{len(problems)} fixture differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
