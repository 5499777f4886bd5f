"""Compare regenerated conformance fixtures with the committed ones.

Usage: python3 compare_fixtures.py COMMITTED_DIR GENERATED_DIR

Byte-equal for everything RocketMQ writes deterministically (the generator pins store timestamps
with a fixed clock): commit log, consume queues, checkpoint, index file contents, oracle.json.
Compared differently because RocketMQ derives them from the wall clock or the process:
  * index/ file names (creation time, ms) -> the contents are compared in name order;
  * abort (5.x writes the PID), abort.bak, lock, rocksdbstore/IDENTITY (random id of the 5.x
    RocksDB the store creates) -> presence only;
  * config/*.json -> parsed (fastjson bare int keys quoted), "dataVersion" dropped;
  * checkpoint -> logicsMsgTimestamp (bytes 8..16) and 5.5's logicsPhysicalOffset (bytes 40..48)
    skipped: 5.x records them when its periodic consume-queue flush happens to run (§6.1).
Prints one line per difference and exits 1 if there is any.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

PRESENCE_ONLY = {"abort", "abort.bak", "lock", "IDENTITY"}
CHECKPOINT_TIMING_FIELDS = (slice(8, 16), slice(40, 48))
BARE_INT_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")


def _config_json(path: Path) -> object:
    doc = json.loads(BARE_INT_KEY.sub(r'\1"\2"\3', path.read_text(encoding="utf-8")))
    if isinstance(doc, dict):
        doc.pop("dataVersion", None)
    return doc


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


def compare_tree(committed: Path, generated: Path) -> list[str]:
    """Differences between two fixture trees, as human-readable lines."""
    old, new = _files(committed), _files(generated)
    problems: list[str] = []
    old_index, new_index = _index_files(old), _index_files(new)
    for directory in sorted(old_index.keys() | new_index.keys()):
        a, b = old_index.get(directory, []), new_index.get(directory, [])
        if len(a) != len(b):
            problems.append(f"{directory}: index file count {len(a)} != {len(b)}")
        for x, y in zip(a, b, strict=False):
            if old[x].read_bytes() != new[y].read_bytes():
                problems.append(f"index file content differs: {x} vs {y}")
    old_index = {name for names in old_index.values() for name in names}
    new_index = {name for names in new_index.values() for name in names}
    plain_old = {k for k in old if k not in old_index}
    plain_new = {k for k in new if k not in new_index}
    for missing in sorted(plain_old - plain_new):
        problems.append(f"missing in regenerated: {missing}")
    for extra in sorted(plain_new - plain_old):
        problems.append(f"not in committed fixtures: {extra}")
    for name in sorted(plain_old & plain_new):
        base = name.rsplit("/", 1)[-1]
        if base in PRESENCE_ONLY or base.endswith(".bak"):
            continue
        if "/config/" in f"/{name}" and base.endswith(".json"):
            if _config_json(old[name]) != _config_json(new[name]):
                problems.append(f"config differs: {name}")
        elif base == "checkpoint":
            if _checkpoint_without_timing_fields(old[name]) != _checkpoint_without_timing_fields(new[name]):
                problems.append(f"checkpoint differs beyond its flush-timing fields: {name}")
        elif old[name].read_bytes() != new[name].read_bytes():
            problems.append(f"bytes differ: {name}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    problems = compare_tree(Path(argv[1]), Path(argv[2]))
    for line in problems:
        print(line)
    print("fixtures match" if not problems else f"{len(problems)} fixture differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
