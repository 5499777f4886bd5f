"""Options of the "rmqstore" source: parsing and validation (design §5).

Names, types, defaults and error wording are generated from docs/contract.toml
(`rmqstore.spark.contract_options`); the typed options are parsed from that table (`_Parsers`), the
others (paths, offsets, index geometry, s3.*) here. Names are case-insensitive (Spark hands them over
lower-cased, every value a string) and every error names the option. `parse_options` turns the raw
mapping into a frozen `RmqOptions`; batch and streaming readers both build on it. Offsets syntax:
design §5.1; `verifyCrc` and its cost: design §5.2.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from rmqstore.io.location import absolute_location, hadoop_file_path, is_s3_uri, with_environment_credentials
from rmqstore.spark import contract_options as contract
from rmqstore.spark.contract_options import (
    ALL_OPTIONS,
    BROKER_NAMES,
    ENDING_OFFSETS,
    ENDING_TIMESTAMP,
    INDEX_ENTRIES,
    INDEX_HASH_SLOTS,
    PATH,
    PATHS,
    S3_ACCESS_KEY,
    S3_ENDPOINT,
    S3_REGION,
    S3_SCHEME,
    S3_SECRET_KEY,
    S3_SESSION_TOKEN,
    STARTING_OFFSETS,
    STARTING_TIMESTAMP,
    OptionValues,
    parse_values,
)

EARLIEST_QUEUE_OFFSET = -2

S3_OPTIONS: dict[str, str] = {
    S3_ACCESS_KEY: "access_key",
    S3_SECRET_KEY: "secret_key",
    S3_SESSION_TOKEN: "session_token",
    S3_REGION: "region",
    S3_ENDPOINT: "endpoint_override",
    S3_SCHEME: "scheme",
}
"""Options for s3:// stores and the `pyarrow.fs.S3FileSystem` argument each sets. Their values are
never shown (names matching Spark's `spark.redaction.regex` are redacted in plans too)."""

_BY_LOWER = {name.lower(): name for name in ALL_OPTIONS}


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


@dataclass(frozen=True, kw_only=True)
class RmqOptions(OptionValues):
    """All options of one read, validated: the typed ones (`OptionValues`, docs/contract.toml) and these.
    Paths and broker names are parallel tuples.

    Local paths are absolute (made so where the options were parsed: the driver), URIs as given.
    """

    paths: tuple[str, ...]
    broker_names: tuple[str, ...]
    starting_offsets: OffsetSpec = EARLIEST
    ending_offsets: OffsetSpec = LATEST
    index_geometry: tuple[int, int] | None = None
    storage_options: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """`pyarrow.fs.S3FileSystem` arguments for the s3:// paths: the s3.* options, else the AWS
    credentials of the driver's environment, pinned so that executors read with them too."""
    raw: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def storage_options_for(self, path: str) -> Mapping[str, str] | None:
        """The storage options to open `path` with (none for paths that are not s3://)."""
        return self.storage_options if is_s3_uri(path) else None


def parse_options(options: Mapping[str, str], *, require_path: bool = True) -> RmqOptions:
    """Validate the raw (case-insensitive, string-valued) options of a read."""
    raw = _canonical_names(options)
    given_paths = _parse_paths(raw, require_path)
    paths = tuple(absolute_location(p) for p in given_paths)
    if len(set(paths)) != len(paths):
        raise OptionError(PATHS, f"the same store is listed twice: {list(given_paths)}")
    starting = parse_offsets(STARTING_OFFSETS, raw.get(STARTING_OFFSETS, "earliest"))
    ending = parse_offsets(ENDING_OFFSETS, raw.get(ENDING_OFFSETS, "latest"))
    hash_slots = _Parsers.integer(raw, INDEX_HASH_SLOTS, 1)
    index_entries = _Parsers.integer(raw, INDEX_ENTRIES, 2)
    if (hash_slots is None) != (index_entries is None):
        missing = INDEX_ENTRIES if index_entries is None else INDEX_HASH_SLOTS
        raise OptionError(missing, contract.given_together(INDEX_HASH_SLOTS, INDEX_ENTRIES))
    values = parse_values(raw, _Parsers)
    starting_ts, ending_ts = values["starting_timestamp"], values["ending_timestamp"]
    if starting_ts is not None and ending_ts is not None and ending_ts < starting_ts:
        raise OptionError(ENDING_TIMESTAMP, contract.before(ending_ts, STARTING_TIMESTAMP, starting_ts))
    if starting.kind == "physical" and ending.kind == "physical" and ending.physical < starting.physical:
        raise OptionError(ENDING_OFFSETS,
                          contract.before(ending.physical, STARTING_OFFSETS, starting.physical))
    return RmqOptions(
        paths=paths,
        broker_names=_parse_broker_names(raw, given_paths),
        starting_offsets=starting,
        ending_offsets=ending,
        index_geometry=None if hash_slots is None else (hash_slots, index_entries),
        storage_options=_storage_options(raw, paths),
        raw=raw,
        **values,
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
    lowered = {name.lower() for name in options}
    for name, value in options.items():
        if _added_by_spark(name.lower(), lowered):
            continue
        canonical = _BY_LOWER.get(name.lower())
        if canonical is None:
            close = difflib.get_close_matches(name.lower(), list(_BY_LOWER), n=1)
            hint = contract.did_you_mean(_BY_LOWER[close[0]]) if close else ""
            raise OptionError(name, contract.unknown_option(hint, ", ".join(ALL_OPTIONS)))
        raw[canonical] = "" if value is None else str(value)
    return raw


def _added_by_spark(name: str, given: set[str]) -> bool:
    """A table property Spark adds to the options of a table, or its copy of a given option
    (`contract.SPARK_TABLE_PROPERTIES`, docs/contract.toml); names in lower case."""
    copied = name.removeprefix(contract.SPARK_OPTION_PREFIX)
    return name in contract.SPARK_TABLE_PROPERTIES or (copied != name and copied in given)


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
    return tuple(hadoop_file_path(p) for p in paths)


def _storage_options(raw: Mapping[str, str], paths: tuple[str, ...]) -> dict[str, str]:
    """The s3.* options as S3FileSystem arguments, plus the environment's AWS credentials (s3:// only)."""
    given = {S3_OPTIONS[name]: value for name, value in raw.items() if name in S3_OPTIONS}
    if given and not any(is_s3_uri(p) for p in paths):
        raise OptionError(next(n for n in raw if n in S3_OPTIONS), "applies to s3:// store paths only")
    if ("access_key" in given) != ("secret_key" in given):
        raise OptionError(S3_SECRET_KEY if "access_key" in given else S3_ACCESS_KEY,
                          contract.given_together(S3_ACCESS_KEY, S3_SECRET_KEY))
    if not any(is_s3_uri(p) for p in paths):
        return given
    return with_environment_credentials(given)


def _parse_broker_names(raw: Mapping[str, str], paths: tuple[str, ...]) -> tuple[str, ...]:
    """Broker column values: `brokerNames` (comma list, one per path) or the paths as given."""
    if BROKER_NAMES not in raw:
        return tuple(p.rstrip("/") or p for p in paths)
    names = tuple(n.strip() for n in raw[BROKER_NAMES].split(","))
    if len(names) != len(paths) or not all(names):
        raise OptionError(BROKER_NAMES, f"needs one non-empty name per store path ({len(paths)}), "
                                        f"got {raw[BROKER_NAMES]!r}")
    return names


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30}


class _Parsers:
    """How this engine parses each type of option (`contract_options.Parsers`); errors name the option."""

    @staticmethod
    def text_list(raw: Mapping[str, str], option: str) -> tuple[str, ...] | None:
        """A comma-separated list, or a JSON list of strings (for values that contain commas)."""
        if option not in raw:
            return None
        text = raw[option].strip()
        if text.startswith("["):
            try:
                items = json.loads(text)
            except json.JSONDecodeError as exc:
                raise OptionError(option, contract.invalid_json_list(exc.msg)) from None
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise OptionError(option, contract.not_string_list())
        else:
            items = text.split(",")
        values = tuple(dict.fromkeys(i.strip() for i in items if i.strip()))
        if not values:
            raise OptionError(option, contract.empty_list())
        return values

    @staticmethod
    def boolean(raw: Mapping[str, str], option: str, default: bool) -> bool:
        if option not in raw:
            return default
        value = raw[option].strip().lower()
        if value in ("true", "1", "yes"):
            return True
        if value in ("false", "0", "no"):
            return False
        raise OptionError(option, contract.not_bool(repr(raw[option])))

    @staticmethod
    def integer(raw: Mapping[str, str], option: str, minimum: int) -> int | None:
        if option not in raw:
            return None
        try:
            value = int(raw[option].strip())
        except ValueError:
            raise OptionError(option, contract.not_integer(repr(raw[option]))) from None
        if value < minimum:
            raise OptionError(option, contract.less_than(value, minimum))
        return value

    long = integer

    @staticmethod
    def size(raw: Mapping[str, str], option: str) -> int | None:
        """A byte count: `1048576`, `512k`, `128m`, `2g` (binary units)."""
        if option not in raw:
            return None
        match = re.fullmatch(r"(\d+)\s*([a-z]*)", raw[option].strip().lower())
        if not match or match.group(2) not in _SIZE_UNITS:
            raise OptionError(option, contract.not_size(repr(raw[option])))
        value = int(match.group(1)) * _SIZE_UNITS[match.group(2)]
        if value < 1:
            raise OptionError(option, contract.size_below_one())
        return value

    size32 = size

    @staticmethod
    def text(raw: Mapping[str, str], option: str) -> str | None:
        return raw.get(option) or None

    @staticmethod
    def timestamp(raw: Mapping[str, str], option: str) -> int | None:
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
                raise OptionError(option, contract.not_timestamp(repr(text))) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            value = round(moment.timestamp() * 1000)
        if value < 0:
            raise OptionError(option, contract.negative(value))
        return value

    @staticmethod
    def choice(raw: Mapping[str, str], option: str, default: str, choices: tuple[str, ...]) -> str:
        value = raw.get(option, default).strip().upper()
        if value not in choices:
            raise OptionError(option, contract.not_choice(repr(raw[option]), ", ".join(choices)))
        return value
