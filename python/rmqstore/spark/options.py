"""Options of the "rmqstore" source: names, defaults, parsing and validation in one place.

Names follow Spark's Kafka source where the meaning is the same (design §5); they are camelCase
and case-insensitive (Spark hands them over lower-cased, every value a string). Every error names
the option. `parse_options` turns the raw mapping into a frozen `RmqOptions`; batch and streaming
readers both build on it.

Offsets (`startingOffsets` / `endingOffsets`):
- `earliest` / `latest`;
- a physical commit-log offset, e.g. `1048576`;
- per topic and queue JSON like Kafka, `{"TopicA":{"0":23,"1":-2}}`: a queue offset, -2 = earliest,
  -1 = latest; queues of a named topic that are not listed start at earliest / end at latest;
- `group:<consumerGroup>`: that group's committed offsets (config/consumerOffset.json).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from rmqstore.format.compression import MAX_MESSAGE_SIZE as DEFAULT_MAX_MESSAGE_SIZE

EARLIEST_QUEUE_OFFSET = -2
LATEST_QUEUE_OFFSET = -1

PATH = "path"
PATHS = "paths"
BROKER_NAMES = "brokerNames"
STARTING_OFFSETS = "startingOffsets"
ENDING_OFFSETS = "endingOffsets"
STARTING_TIMESTAMP = "startingTimestamp"
ENDING_TIMESTAMP = "endingTimestamp"
TOPICS = "topics"
KEYS = "keys"
MIN_PARTITIONS = "minPartitions"
MAX_BYTES_PER_PARTITION = "maxBytesPerPartition"
VERIFY_CRC = "verifyCrc"
MODE = "mode"
DECOMPRESS = "decompress"
INDEX_HASH_SLOTS = "indexHashSlots"
INDEX_ENTRIES = "indexEntries"
PUSHDOWN = "pushdown"
KEY_PROBE_PARTITION_THRESHOLD = "keyProbePartitionThreshold"
STALE_READER_CHECK = "staleReaderCheck"
STATS_DIR = "statsDir"
FAIL_ON_DATA_LOSS = "failOnDataLoss"
MAX_OFFSETS_PER_TRIGGER = "maxOffsetsPerTrigger"
MAX_BYTES_PER_TRIGGER = "maxBytesPerTrigger"
MAX_MESSAGE_SIZE = "maxMessageSize"

ALL_OPTIONS: tuple[str, ...] = (
    PATH, PATHS, BROKER_NAMES, STARTING_OFFSETS, ENDING_OFFSETS, STARTING_TIMESTAMP, ENDING_TIMESTAMP,
    TOPICS, KEYS, MIN_PARTITIONS, MAX_BYTES_PER_PARTITION, VERIFY_CRC, MODE, DECOMPRESS,
    INDEX_HASH_SLOTS, INDEX_ENTRIES, PUSHDOWN, KEY_PROBE_PARTITION_THRESHOLD, STALE_READER_CHECK,
    STATS_DIR, FAIL_ON_DATA_LOSS, MAX_OFFSETS_PER_TRIGGER, MAX_BYTES_PER_TRIGGER, MAX_MESSAGE_SIZE,
)
_BY_LOWER = {name.lower(): name for name in ALL_OPTIONS}

DEFAULT_MAX_BYTES_PER_PARTITION = 128 * 1024 * 1024
DEFAULT_KEY_PROBE_PARTITION_THRESHOLD = 64
MODES = ("FAILFAST", "PERMISSIVE")


class OptionError(ValueError):
    """An invalid option value; the message starts with the option's name."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"rmqstore option '{option}': {problem}")
        self.option = option


@dataclass(frozen=True)
class OffsetSpec:
    """A parsed startingOffsets / endingOffsets value (see the module docstring)."""

    kind: Literal["earliest", "latest", "physical", "queues", "group"]
    physical: int | None = None
    queues: Mapping[str, Mapping[int, int]] | None = None
    group: str | None = None


EARLIEST = OffsetSpec("earliest")
LATEST = OffsetSpec("latest")


@dataclass(frozen=True)
class RmqOptions:
    """All options of one read, validated. Paths and broker names are parallel tuples."""

    paths: tuple[str, ...]
    broker_names: tuple[str, ...]
    starting_offsets: OffsetSpec = EARLIEST
    ending_offsets: OffsetSpec = LATEST
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    topics: tuple[str, ...] | None = None
    keys: tuple[str, ...] | None = None
    min_partitions: int | None = None
    max_bytes_per_partition: int = DEFAULT_MAX_BYTES_PER_PARTITION
    verify_crc: bool = False
    mode: str = "FAILFAST"
    decompress: bool = True
    index_geometry: tuple[int, int] | None = None
    pushdown: bool = True
    key_probe_partition_threshold: int = DEFAULT_KEY_PROBE_PARTITION_THRESHOLD
    stale_reader_check: bool = True
    stats_dir: str | None = None
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    """Cap on a decompressed body (RocketMQ's `maxMessageSize`); a body inflating past it is corrupt."""
    raw: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)


def parse_options(options: Mapping[str, str], *, require_path: bool = True) -> RmqOptions:
    """Validate the raw (case-insensitive, string-valued) options of a read."""
    raw = _canonical_names(options)
    paths = _parse_paths(raw, require_path)
    starting = parse_offsets(STARTING_OFFSETS, raw.get(STARTING_OFFSETS, "earliest"))
    ending = parse_offsets(ENDING_OFFSETS, raw.get(ENDING_OFFSETS, "latest"))
    hash_slots = _optional_int(raw, INDEX_HASH_SLOTS, minimum=1)
    index_entries = _optional_int(raw, INDEX_ENTRIES, minimum=2)
    if (hash_slots is None) != (index_entries is None):
        missing = INDEX_ENTRIES if index_entries is None else INDEX_HASH_SLOTS
        raise OptionError(missing, f"must be given together with '{INDEX_HASH_SLOTS}'/'{INDEX_ENTRIES}'")
    starting_ts = _optional_timestamp(raw, STARTING_TIMESTAMP)
    ending_ts = _optional_timestamp(raw, ENDING_TIMESTAMP)
    if starting_ts is not None and ending_ts is not None and ending_ts < starting_ts:
        raise OptionError(ENDING_TIMESTAMP, f"{ending_ts} is before {STARTING_TIMESTAMP} {starting_ts}")
    if starting.kind == "physical" and ending.kind == "physical" and ending.physical < starting.physical:
        raise OptionError(ENDING_OFFSETS, f"{ending.physical} is before {STARTING_OFFSETS} "
                                          f"{starting.physical}")
    mode = raw.get(MODE, "FAILFAST").strip().upper()
    if mode not in MODES:
        raise OptionError(MODE, f"{raw[MODE]!r} is not one of {', '.join(MODES)}")
    return RmqOptions(
        paths=paths,
        broker_names=_parse_broker_names(raw, paths),
        starting_offsets=starting,
        ending_offsets=ending,
        starting_timestamp=starting_ts,
        ending_timestamp=ending_ts,
        topics=_optional_list(raw, TOPICS),
        keys=_optional_list(raw, KEYS),
        min_partitions=_optional_int(raw, MIN_PARTITIONS, minimum=1),
        max_bytes_per_partition=_optional_size(raw, MAX_BYTES_PER_PARTITION)
        or DEFAULT_MAX_BYTES_PER_PARTITION,
        verify_crc=_bool(raw, VERIFY_CRC, False),
        mode=mode,
        decompress=_bool(raw, DECOMPRESS, True),
        index_geometry=None if hash_slots is None else (hash_slots, index_entries),
        pushdown=_bool(raw, PUSHDOWN, True),
        key_probe_partition_threshold=_optional_int(raw, KEY_PROBE_PARTITION_THRESHOLD, minimum=1)
        or DEFAULT_KEY_PROBE_PARTITION_THRESHOLD,
        stale_reader_check=_bool(raw, STALE_READER_CHECK, True),
        stats_dir=raw.get(STATS_DIR) or None,
        fail_on_data_loss=_bool(raw, FAIL_ON_DATA_LOSS, True),
        max_offsets_per_trigger=_optional_int(raw, MAX_OFFSETS_PER_TRIGGER, minimum=1),
        max_bytes_per_trigger=_optional_size(raw, MAX_BYTES_PER_TRIGGER),
        max_message_size=_optional_size(raw, MAX_MESSAGE_SIZE) or DEFAULT_MAX_MESSAGE_SIZE,
        raw=raw,
    )


def parse_offsets(option: str, text: str) -> OffsetSpec:
    """Parse a startingOffsets / endingOffsets value; errors name `option`."""
    value = text.strip()
    lowered = value.lower()
    if lowered == "earliest":
        return EARLIEST
    if lowered == "latest":
        return LATEST
    if lowered.startswith("group:"):
        group = value[len("group:"):].strip()
        if not group:
            raise OptionError(option, "'group:' needs a consumer group name, e.g. group:MyConsumerGroup")
        return OffsetSpec("group", group=group)
    if re.fullmatch(r"\d+", value):
        return OffsetSpec("physical", physical=int(value))
    if value.startswith("{"):
        return OffsetSpec("queues", queues=_parse_queue_json(option, value))
    raise OptionError(option, f"{text!r} is not 'earliest', 'latest', a physical offset, "
                              "'group:<consumerGroup>' or JSON like {\"TopicA\":{\"0\":23,\"1\":-2}}")


def _parse_queue_json(option: str, text: str) -> dict[str, dict[int, int]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(option, f"invalid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(doc, dict) or not doc:
        raise OptionError(option, "JSON must be a non-empty object {topic: {queueId: offset}}")
    parsed: dict[str, dict[int, int]] = {}
    for topic, queues in doc.items():
        if not isinstance(queues, dict):
            raise OptionError(option, f"topic {topic!r}: expected an object {{queueId: offset}}")
        parsed[topic] = {}
        for queue_id, offset in queues.items():
            if not re.fullmatch(r"\d+", str(queue_id)):
                raise OptionError(option, f"topic {topic!r}: queue id {queue_id!r} is not a number")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < EARLIEST_QUEUE_OFFSET:
                raise OptionError(option, f"topic {topic!r} queue {queue_id}: offset {offset!r} must be "
                                          ">= 0, -2 (earliest) or -1 (latest)")
            parsed[topic][int(queue_id)] = offset
    return parsed


def _canonical_names(options: Mapping[str, str]) -> dict[str, str]:
    raw: dict[str, str] = {}
    for name, value in options.items():
        canonical = _BY_LOWER.get(name.lower())
        if canonical is None:
            close = difflib.get_close_matches(name.lower(), list(_BY_LOWER), n=1)
            hint = f"; did you mean '{_BY_LOWER[close[0]]}'?" if close else ""
            raise OptionError(name, f"unknown option{hint} Known options: {', '.join(ALL_OPTIONS)}")
        raw[canonical] = "" if value is None else str(value)
    return raw


def _parse_paths(raw: Mapping[str, str], require_path: bool) -> tuple[str, ...]:
    if PATHS in raw:
        try:
            paths = json.loads(raw[PATHS])
        except json.JSONDecodeError:
            paths = raw[PATHS].split(",")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise OptionError(PATHS, "must be a JSON list of store paths, e.g. [\"/a/store\",\"/b/store\"]")
        paths = [p.strip() for p in paths if p.strip()]
        if PATH in raw and raw[PATH].strip():
            paths.insert(0, raw[PATH].strip())
    elif PATH in raw and raw[PATH].strip():
        paths = [raw[PATH].strip()]
    else:
        paths = []
    if not paths and require_path:
        raise OptionError(PATH, "no store directory given: use .load('/path/to/store') or "
                                ".option('path', ...)")
    if len(set(paths)) != len(paths):
        raise OptionError(PATHS, f"the same store is listed twice: {paths}")
    return tuple(paths)


def _parse_broker_names(raw: Mapping[str, str], paths: tuple[str, ...]) -> tuple[str, ...]:
    """Broker column values: `brokerNames` (comma list, one per path) or the paths as given."""
    if BROKER_NAMES not in raw:
        return tuple(p.rstrip("/") or p for p in paths)
    names = tuple(n.strip() for n in raw[BROKER_NAMES].split(","))
    if len(names) != len(paths) or not all(names):
        raise OptionError(BROKER_NAMES, f"needs one non-empty name per store path ({len(paths)}), "
                                        f"got {raw[BROKER_NAMES]!r}")
    return names


def _optional_list(raw: Mapping[str, str], option: str) -> tuple[str, ...] | None:
    """A comma-separated list, or a JSON list of strings (for values that contain commas)."""
    if option not in raw:
        return None
    text = raw[option].strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OptionError(option, f"invalid JSON list ({exc.msg})") from None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise OptionError(option, "JSON value must be a list of strings")
    else:
        items = text.split(",")
    values = tuple(dict.fromkeys(i.strip() for i in items if i.strip()))
    if not values:
        raise OptionError(option, "empty list")
    return values


def _bool(raw: Mapping[str, str], option: str, default: bool) -> bool:
    if option not in raw:
        return default
    value = raw[option].strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionError(option, f"{raw[option]!r} is not true or false")


def _optional_int(raw: Mapping[str, str], option: str, *, minimum: int) -> int | None:
    if option not in raw:
        return None
    try:
        value = int(raw[option].strip())
    except ValueError:
        raise OptionError(option, f"{raw[option]!r} is not an integer") from None
    if value < minimum:
        raise OptionError(option, f"{value} is less than {minimum}")
    return value


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30}


def _optional_size(raw: Mapping[str, str], option: str) -> int | None:
    """A byte count: `1048576`, `512k`, `128m`, `2g` (binary units)."""
    if option not in raw:
        return None
    match = re.fullmatch(r"(\d+)\s*([a-z]*)", raw[option].strip().lower())
    if not match or match.group(2) not in _SIZE_UNITS:
        raise OptionError(option, f"{raw[option]!r} is not a byte size such as 1048576, 512k, 128m or 2g")
    value = int(match.group(1)) * _SIZE_UNITS[match.group(2)]
    if value < 1:
        raise OptionError(option, "must be at least 1 byte")
    return value


def _optional_timestamp(raw: Mapping[str, str], option: str) -> int | None:
    """Epoch milliseconds (like Kafka's option), or an ISO-8601 time (UTC unless it has an offset)."""
    if option not in raw:
        return None
    text = raw[option].strip()
    if re.fullmatch(r"-?\d+", text):
        value = int(text)
    else:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise OptionError(option, f"{text!r} is not epoch milliseconds or an ISO-8601 time") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        value = round(moment.timestamp() * 1000)
    if value < 0:
        raise OptionError(option, f"{value} is negative")
    return value
