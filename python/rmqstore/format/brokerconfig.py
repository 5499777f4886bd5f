"""Broker `config/*.json` files: fastjson 1.x output with bare integer map keys (spec §1.4)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

TOPIC_GROUP_SEPARATOR = "@"
"""consumerOffset.json keys are `<topic>@<group>` (`ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR`)."""
INDENT = "\t"

# A JSON string (skipped as is) or a bare integer key after `{` or `,`.
_STRING_OR_BARE_KEY = re.compile(
    r'"(?:[^"\\]|\\.)*"|(?P<lead>[{,]\s*)(?P<key>-?\d+)(?P<tail>\s*:)', re.DOTALL
)


def _quote_bare_keys(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group("key") is None:
            return match.group(0)
        return f'{match.group("lead")}"{match.group("key")}"{match.group("tail")}'

    return _STRING_OR_BARE_KEY.sub(replace, text)


def parse_fastjson(text: str) -> Any:
    """Parse broker JSON, quoting fastjson's bare integer keys (`{0:7}`) first (§1.4).

    Integer keys come back as strings, as in any JSON object. Raises ValueError with the position,
    or saying that the document nests too deeply to parse (the broker's config files nest 4 levels).
    """
    try:
        return json.loads(_quote_bare_keys(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not fastjson/JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def consumer_offsets(doc: Mapping[str, Any]) -> dict[tuple[str, str], dict[int, int]]:
    """consumerOffset.json `offsetTable` -> {(topic, group): {queueId: next queue offset}} (§1.4).

    Keys that do not split into exactly two parts at `@` are skipped, as the broker does. Values of
    the wrong type (queue ids not Java ints, offsets not Java longs) raise ValueError naming them.
    """
    result: dict[tuple[str, str], dict[int, int]] = {}
    for topic_at_group, offsets in _table(doc, "offsetTable").items():
        parts = topic_at_group.split(TOPIC_GROUP_SEPARATOR)
        if len(parts) != 2:
            continue
        try:
            table = {_java_int(queue, 31): _java_int(offset, 63) for queue, offset in offsets.items()}
        except (AttributeError, TypeError, ValueError):
            raise ValueError(f"offsetTable entry {topic_at_group!r} is not a queueId -> offset map") from None
        result[(parts[0], parts[1])] = table
    return result


def _table(doc: Any, name: str) -> Mapping[str, Any]:
    """`doc[name]`, a JSON object ({} when absent or null); ValueError when either is not an object."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"the document is a {type(doc).__name__}, not a JSON object")
    table = doc.get(name) or {}
    if not isinstance(table, Mapping):
        raise ValueError(f"{name} is not a JSON object")
    return table


def _java_int(value: Any, bits: int) -> int:
    """An integer (or its decimal text, as map keys are) inside a Java int (31) or long (63)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not an integer")
    number = int(value)
    if not -(1 << bits) <= number < 1 << bits:
        raise ValueError(f"{number} is out of range")
    return number


def topic_configs(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """topics.json `topicConfigTable`: {topic: TopicConfig fields} (§1.4); ValueError when a table
    or a topic's config is not a JSON object."""
    table = _table(doc, "topicConfigTable")
    bad = [topic for topic, config in table.items() if not isinstance(config, Mapping)]
    if bad:
        raise ValueError(f"topicConfigTable entry {bad[0]!r} is not a JSON object")
    return {str(topic): dict(config) for topic, config in table.items()}


def encode_fastjson(obj: Any) -> str:
    """Pretty JSON with tab indentation and bare integer keys for int-keyed maps, like the broker (§1.4)."""
    return _encode(obj, 0)


def _encode_key(key: Any) -> str:
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key)
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    raise ValueError(f"map key {key!r} is neither a string nor an integer")


def _encode(obj: Any, depth: int) -> str:
    inner = INDENT * (depth + 1)
    if isinstance(obj, Mapping):
        if not obj:
            return "{}"
        items = [f"{inner}{_encode_key(k)}:{_encode(v, depth + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + INDENT * depth + "}"
    if isinstance(obj, list | tuple):
        if not obj:
            return "[]"
        items = [f"{inner}{_encode(v, depth + 1)}" for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + INDENT * depth + "]"
    return json.dumps(obj, ensure_ascii=False)
