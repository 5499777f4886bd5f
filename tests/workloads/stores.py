"""The stores of the workload cases (tests/workloads/README.md): committed conformance fixtures, or
stores the project's writer builds from a case's recipe, with a damage applied and a manifest of
what was written (the truth of recipe cases; never what rmqstore reads back).

    python3 tests/workloads/stores.py OUT_DIR

builds every recipe the cases name under OUT_DIR (one directory per distinct recipe) and writes
OUT_DIR/index.json: case name -> {"store": path, "manifest": {...}}. The ScalaTest twin
(WorkloadSuite.scala) reads that, so both engines read byte-identical stores.

A recipe: `records` messages (topics round-robin over `topics`, one queue each, key `k<i>`, tags
`t<i % 4>`, bodies of `bodySize` bytes; `bigBodies` {ordinal: size} makes some larger) in commit-log
segments of `segmentSize` bytes, then `damage` (a list, applied in order):
- `{"kind": "bodyFlip", "record": n}`: one body byte of record n flipped (BODYCRC mismatch, §2.2);
- `{"kind": "zeroPage", "record": n}`: the first whole 4 KiB page inside record n zeroed (a page
  the kernel never wrote back);
- `{"kind": "zeroSpan", "record": n}`: the bytes from the middle of record n through the 8-byte header of
  record n + 1 zeroed (record n's TOTALSIZE leads to zeros, not to a record);
- `{"kind": "cqUnitNowhere", "record": n}`: record n's consume-queue unit points 4 bytes into the
  record, where no record starts (§4.1);
- `{"kind": "cqUnitZeroed", "record": n}`: record n's consume-queue unit zeroed, valid units after it (an
  invalid unit that is damage, not the queue's end, docs/damage.md §2);
- `{"kind": "cqTailZeroed", "topic": t, "units": k}`: the units of topic t's last k records zeroed (units
  lost at the queue's end, which look like the zeros past it, docs/damage.md §3);
- `{"kind": "cqTailBeyond", "topic": t, "units": k}`: those units pointing past the log's end instead;
- `{"kind": "undispatched", "records": n}`: the last n records not dispatched yet (a live broker without
  message index whose dispatcher is behind): their units zeroed and the index files removed;
- `{"kind": "tornTail"}`: the first half of one more record after the log's end (a broker writing);
- `{"kind": "abort"}`: an `abort` file, as a copy of a running broker has (§6.2).
The manifest: `offsets` and `sizes` of the records in log order, `segmentSize`, `damaged` (the
physical offsets of the damaged records, or where a damaged unit points, or the record of a zeroed unit,
or the first record whose unit a tail damage lost, in the order of `damage`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from rmqstore.format.consumequeue import CQ_UNIT_SIZE
from rmqstore.writer import MessageSpec, StoreWriter
from rmqstore.writer.files import offset_file_name

HERE = Path(__file__).parent
CASES_DIR = HERE / "cases"
REPO = HERE.parent.parent
FIXTURES = REPO / "tests" / "conformance" / "fixtures"
PAGE = 4096


def load_cases() -> list[dict]:
    """Every case, sorted by name (one JSON file per case)."""
    cases = [json.loads(p.read_text()) | {"name": p.stem} for p in sorted(CASES_DIR.glob("*.json"))]
    return sorted(cases, key=lambda c: c["name"])


def recipe_key(recipe: dict) -> str:
    return hashlib.sha1(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def build(recipe: dict, root: Path) -> dict:
    """Write the store of `recipe` under `root`; its manifest."""
    topics = recipe.get("topics", ["T"])
    big = {int(k): v for k, v in recipe.get("bigBodies", {}).items()}
    damage = recipe.get("damage", [])
    results = []
    writer = StoreWriter(root, segment_size=recipe["segmentSize"], cq_segment_size=1000 * CQ_UNIT_SIZE,
                         index_hash_slots=64, index_entries=4096, seed=3, preallocate_next_segment=False)
    for topic in topics:
        writer.declare_topic(topic, 1)
    for i in range(recipe["records"]):
        size = big.get(i, recipe.get("bodySize", 40))
        body = (f"body-{i:06d}-".encode() * (size // 12 + 1))[:size]
        results.append(writer.append(MessageSpec(topics[i % len(topics)], body, queue_id=0, keys=f"k{i}",
                                                 tags=f"t{i % 4}")))
    torn = any(d["kind"] == "tornTail" for d in damage)
    writer.close(crashed=torn)
    if torn:
        (root / "abort").unlink()  # a live broker's store, not a crash copy
    segment = recipe["segmentSize"]
    damaged = []
    for d in damage:
        if d["kind"] in ("tornTail",):
            continue
        if d["kind"] == "abort":
            (root / "abort").write_text("4242")
            continue
        if d["kind"] in ("cqTailZeroed", "cqTailBeyond", "undispatched"):
            damaged += _lose_units(root, results, d)
            continue
        r = results[d["record"]]
        if d["kind"] in ("cqUnitNowhere", "cqUnitZeroed"):
            unit_at = r.queue_offset * CQ_UNIT_SIZE
            path = root / "consumequeue" / r.topic / str(r.queue_id) / offset_file_name(0)
            nowhere = d["kind"] == "cqUnitNowhere"
            patch = (r.physical_offset + 4).to_bytes(8, "big") if nowhere else bytes(CQ_UNIT_SIZE)
            _patch(path, unit_at, patch)
            damaged.append(r.physical_offset + 4 if nowhere else r.physical_offset)
            continue
        damaged.append(r.physical_offset)
        path = root / "commitlog" / offset_file_name(r.physical_offset // segment * segment)
        at = r.physical_offset % segment
        data = path.read_bytes()
        if d["kind"] == "bodyFlip":
            body_at = data.index(f"body-{d['record']:06d}-".encode(), at, at + r.store_size)
            _patch(path, body_at, bytes([data[body_at] ^ 0x01]))
        elif d["kind"] == "zeroPage":
            page = -(-(at + 1) // PAGE) * PAGE
            if page + PAGE > at + r.store_size:
                raise ValueError(f"record {d['record']} holds no whole page")
            _patch(path, page, bytes(PAGE))
        elif d["kind"] == "zeroSpan":
            upto = results[d["record"] + 1].physical_offset % segment + 8
            _patch(path, at + r.store_size // 2, bytes(upto - at - r.store_size // 2))
        else:
            raise ValueError(f"unknown damage {d['kind']!r}")
    return {"offsets": [r.physical_offset for r in results], "sizes": [r.store_size for r in results],
            "segmentSize": segment, "damaged": damaged}


def _lose_units(root: Path, results: list, d: dict) -> list[int]:
    """Units lost at queues' ends (`cqTailZeroed`, `cqTailBeyond`: the record of the first lost unit) or
    not written yet (`undispatched`: nothing damaged)."""
    if d["kind"] == "undispatched":
        lost = results[-d["records"]:]
        for index_file in (root / "index").iterdir():
            index_file.unlink()
    else:
        lost = [r for r in results if r.topic == d["topic"]][-d["units"]:]
    log_end = results[-1].physical_offset + results[-1].store_size
    for r in lost:
        path = root / "consumequeue" / r.topic / str(r.queue_id) / offset_file_name(0)
        beyond = d["kind"] == "cqTailBeyond"
        unit = (log_end + r.physical_offset).to_bytes(8, "big") if beyond else bytes(CQ_UNIT_SIZE)
        _patch(path, r.queue_offset * CQ_UNIT_SIZE, unit)
    return [] if d["kind"] == "undispatched" else [lost[0].physical_offset]


def _patch(path: Path, at: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(data)


def build_all(out: Path, cases: list[dict]) -> dict[str, dict]:
    """Every case's store under `out` (each distinct recipe built once): case name -> store, manifest."""
    built: dict[str, dict] = {}
    index = {}
    for case in cases:
        store = case["store"]
        if "fixture" in store:
            index[case["name"]] = {"store": str(FIXTURES / store["fixture"] / "store"), "manifest": None}
            continue
        key = recipe_key(store["recipe"])
        if key not in built:
            root = out / key / "store"
            built[key] = {"store": str(root), "manifest": build(store["recipe"], root)}
        index[case["name"]] = built[key]
    return index


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    index = build_all(out, load_cases())
    (out / "index.json").write_text(json.dumps(index, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
