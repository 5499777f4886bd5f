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

    Integer keys come back as strings, as in any JSON object. Raises ValueError with the position.
    """
    try:
        return json.loads(_quote_bare_keys(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not fastjson/JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def consumer_offsets(doc: Mapping[str, Any]) -> dict[tuple[str, str], dict[int, int]]:
    """consumerOffset.json `offsetTable` -> {(topic, group): {queueId: next queue offset}} (§1.4).

    Keys that do not split into exactly two parts at `@` are skipped, as the broker does.
    """
    result: dict[tuple[str, str], dict[int, int]] = {}
    for topic_at_group, offsets in (doc.get("offsetTable") or {}).items():
        parts = topic_at_group.split(TOPIC_GROUP_SEPARATOR)
        if len(parts) != 2:
            continue
        try:
            result[(parts[0], parts[1])] = {int(queue): int(offset) for queue, offset in offsets.items()}
        except (AttributeError, TypeError, ValueError):
            raise ValueError(f"offsetTable entry {topic_at_group!r} is not a queueId -> offset map") from None
    return result


def topic_configs(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """topics.json `topicConfigTable`: {topic: TopicConfig fields} (§1.4)."""
    table = doc.get("topicConfigTable") or {}
    if not isinstance(table, Mapping):
        raise ValueError("topicConfigTable is not a JSON object")
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
