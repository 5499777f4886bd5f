"""What a workload case expects, resolved against its store (tests/workloads/README.md): offsets
from the case (fixture cases) or from record ordinals through the writer's manifest (recipe cases),
error substrings with the damaged record's file and offset filled in; and RocketMQ's own answer
for a fixture case's filter (its oracle.json records filtered here, without rmqstore).
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass

from stores import FIXTURES

_OPS = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "in": lambda have, values: have in values}


@dataclass(frozen=True)
class Expected:
    """The resolved expectation of one case."""

    offsets: list[int] | None
    """Every commitLogOffset the query returns, sorted; None when only `count`/`first`/`last` are given."""
    count: int | None
    first: int | None
    last: int | None
    error: list[str] | None
    """Substrings the error names (file, offset) when the read must fail."""
    skipped_records: int | None
    skipped_bytes: int | None
    access: str | None
    tasks: int | None

    def check_offsets(self, got: list[int]) -> None:
        got = sorted(got)
        if self.offsets is not None:
            missing, extra = sorted(set(self.offsets) - set(got)), sorted(set(got) - set(self.offsets))
            assert got == self.offsets, (f"{len(got)} rows, expected {len(self.offsets)}; "
                                         f"missing {missing[:5]}, extra {extra[:5]}")
        else:
            assert (len(got), got[:1], got[-1:]) == (self.count, [self.first], [self.last])


def resolve(case: dict, manifest: dict | None) -> Expected:
    want = case["expect"]
    holes = _placeholders(manifest)
    offsets = want.get("offsets")
    if "ordinals" in want:
        start, stop, step = want["ordinals"]["range"]
        dropped = set(want["ordinals"].get("except", []))
        offsets = [manifest["offsets"][i] for i in range(start, stop, step) if i not in dropped]
    count, first, last = want.get("count"), want.get("first"), want.get("last")
    if offsets is not None:
        count, first, last = len(offsets), offsets[0] if offsets else None, offsets[-1] if offsets else None
    skipped = want.get("skipped", {})
    skipped_bytes = skipped.get("bytes")
    return Expected(
        offsets=sorted(offsets) if offsets is not None else None, count=count, first=first, last=last,
        error=[s.format(**holes) for s in want["error"]] if "error" in want else None,
        skipped_records=skipped.get("records"),
        skipped_bytes=int(skipped_bytes.format(**holes)) if isinstance(skipped_bytes, str) else skipped_bytes,
        access=want.get("access"), tasks=want.get("tasks"))


def _placeholders(manifest: dict | None) -> dict[str, str]:
    """`{damagedOffset}`, `{damagedSegment}` (the segment file's name) and `{damagedSize}` of the
    first damage (a damaged record, or where a damaged consume-queue unit points: no size)."""
    if not manifest or not manifest["damaged"]:
        return {}
    at = manifest["damaged"][0]
    segment = manifest["segmentSize"]
    holes = {"damagedOffset": str(at), "damagedSegment": f"{at // segment * segment:020d}"}
    if at in manifest["offsets"]:
        holes["damagedSize"] = str(manifest["sizes"][manifest["offsets"].index(at)])
    return holes


def oracle_offsets(fixture: str, filters: list[list], topics: str | None = None) -> list[int]:
    """The commitLogOffsets of the fixture's records (RocketMQ's decoding, oracle.json) that pass
    `filters` (SQL semantics: null matches nothing; storeTimestamp in epoch ms), in `topics` when
    given, once per named queue holding it (its topic's, and the `%LMQ%` queues its INNER_MULTI_DISPATCH
    names: docs/format.md §4.6); a crash copy's records end at RocketMQ's recovered end."""
    oracle = json.loads((FIXTURES / fixture / "oracle.json").read_text())
    records = oracle.get("records")
    if "recordsFrom" in oracle:
        source = json.loads((FIXTURES / oracle["recordsFrom"] / "oracle.json").read_text())["records"]
        records = [r for r in source if r["commitLogOffset"] < oracle["recoveredMaxPhyOffset"]]
    wanted_topics = set(topics.split(",")) if topics else None

    def copies(record: dict) -> int:
        if wanted_topics is None:
            return 1
        dispatched = record["properties"].get("INNER_MULTI_DISPATCH", "").split(",")
        return (record["topic"] in wanted_topics) + len(wanted_topics.intersection(
            q for q in dispatched if q.startswith("%LMQ%")))

    def passes(record: dict) -> bool:
        for column, op, value in filters:
            have = record[column]
            if have is None or not _OPS[op](have, value):
                return False
        return True

    return sorted(r["commitLogOffset"] for r in records if passes(r) for _ in range(copies(r)))
