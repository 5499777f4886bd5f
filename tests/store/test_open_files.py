"""Planning a store of more queue files than the process may open: `OpenFiles` keeps at most
`MAX_OPEN_FILES` of them (a local file's map holds a descriptor), so coverage and a key lookup work under a
low `ulimit -n` and give what they give without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from rmqstore.io.local import LocalFileSystem
from rmqstore.plan.lookup import find_by_key
from rmqstore.store import Store
from rmqstore.store.segments import MAX_OPEN_FILES, OpenFiles
from rmqstore.writer.bulk import BulkShape, create_bulk_store

SHAPE = BulkShape(target_bytes=1 << 20, topics=200, queues=4, seed=1, segment_size=1 << 20, cq_units=300,
                  index_hash_slots=97, index_entries=4000, key_repeats=5)
FILE_LIMIT = MAX_OPEN_FILES + 64
"""RLIMIT_NOFILE of the planning process: the interpreter's own descriptors fit in the 64 left over."""

PLAN = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[4]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
sys.path.insert(0, sys.argv[1])
from test_open_files import plan_result
print(json.dumps(plan_result(sys.argv[2], sys.argv[3])))
"""


def plan_result(store: str, key: str) -> list:
    """A key lookup (which decides the coverage) and the coverage's gaps, as JSON lists."""
    with Store.open(store) as opened:
        return [find_by_key(opened, key), [list(map(list, v.gaps)) for v in opened.coverage.verdicts]]


def test_planning_more_queue_files_than_the_descriptor_limit(tmp_path, monkeypatch) -> None:
    store = tmp_path / "store"
    key = create_bulk_store(store, SHAPE).middle.key
    queue_files = sum(len(files) for _, _, files in os.walk(store / "consumequeue"))
    assert queue_files > FILE_LIMIT + 100
    monkeypatch.setenv("RMQSTORE_CACHE_DIR", str(tmp_path / "cache-a"))  # fresh caches: coverage is decided
    unlimited = plan_result(str(store), key)
    assert unlimited[0] and unlimited[1]
    env = {**os.environ, "RMQSTORE_CACHE_DIR": str(tmp_path / "cache-b")}
    args = [str(Path(__file__).parent), str(store), key, str(FILE_LIMIT)]
    run = subprocess.run([sys.executable, "-c", PLAN, *args], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == unlimited


def test_open_files_drops_the_least_recently_used_without_closing_it(tmp_path) -> None:
    for name in "abc":
        (tmp_path / name).write_bytes(name.encode() * 4)
    files = OpenFiles(LocalFileSystem(), max_open=2)
    a = files.get(str(tmp_path / "a"))
    files.get(str(tmp_path / "b"))
    assert files.get(str(tmp_path / "a")) is a  # used again: "b" is now the oldest
    files.get(str(tmp_path / "c"))
    assert files.get(str(tmp_path / "a")) is a
    b = files.get(str(tmp_path / "b"))  # dropped and opened again
    assert bytes(b.read(0, 4)) == b"bbbb"
    c_dropped = files.get(str(tmp_path / "c"))
    files.get(str(tmp_path / "a"))
    files.get(str(tmp_path / "b"))
    assert files.get(str(tmp_path / "c")) is not c_dropped
    assert np.array_equal(c_dropped.read(0, 4), np.frombuffer(b"cccc", dtype=np.uint8))  # still readable
    files.close()
