"""Two fixed mutants of the Spark corruption campaign (spark_campaign.py), on both engines in the shared
session: a commit-log record whose header is zeroed, read by a batch scan and a log stream, and a
consume-queue unit pointing into the middle of a record, read by a batch `topics` read and a `topics`
stream; FAILFAST and PERMISSIVE. The one damage rule (design §7): no disagreement between the engines,
no silent skip in FAILFAST, no phantom row, no hang.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from spark_campaign import Damage, Tally, run_mutant, truth

from rmqstore.format.consumequeue import CQ_UNIT_SIZE
from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.writer.files import offset_file_name

pytestmark = pytest.mark.spark
SEGMENT = 131072
"""campaign.py's base store segment size."""


@pytest.fixture(scope="module")
def want(base_store: Path) -> dict[str, frozenset[int]]:
    return truth(str(base_store))


def _patch(path: str, at: int, data: bytes) -> None:
    data_before = Path(path).read_bytes()
    os.unlink(path)  # break the hard link to the base store's file
    Path(path).write_bytes(data_before[:at] + data + data_before[at + len(data):])


def _zeroed_header(store: str, offsets: list[int]) -> Damage:
    """20 bytes after the TOTALSIZE of the log's 100th record zeroed: MAGIC, BODYCRC, QUEUEID, FLAG (§2.2)."""
    at = offsets[100]
    path = os.path.join(store, "commitlog", offset_file_name(at // SEGMENT * SEGMENT))
    _patch(path, at % SEGMENT + 4, bytes(20))
    return Damage("commitlog", f"record at {at}: 20 header bytes zeroed", path, at + 4)


def _unit_into_a_record(store: str) -> Damage:
    """OrderEvents queue 0's unit 3 points 7 bytes into the record its unit 2 names (§4.1)."""
    path = os.path.join(store, "consumequeue", "OrderEvents", "0", offset_file_name(0))
    named = int.from_bytes(Path(path).read_bytes()[2 * CQ_UNIT_SIZE:2 * CQ_UNIT_SIZE + 8], "big")
    _patch(path, 3 * CQ_UNIT_SIZE, (named + 7).to_bytes(8, "big"))
    return Damage("consumequeue", f"OrderEvents/0 unit 3 -> {named + 7}", path, None)


@pytest.mark.parametrize(("make", "reads"), [
    (lambda store, offsets: _zeroed_header(store, offsets), ("batch-scan", "stream-log")),
    (lambda store, offsets: _unit_into_a_record(store), ("batch-topics", "stream-topics")),
], ids=["commitlog-header", "consumequeue-unit"])
def test_fixed_mutant(spark, damaged: Path, want: dict, make, reads) -> None:
    store = str(damaged)
    mutant = make(store, sorted(want["batch-scan"]))
    tally = Tally()
    run_mutant(spark, {"jvm": PROVIDER_CLASS, "python": "rmqstore_python"}, mutant, store, want, tally,
               timeout=120, reads=reads)
    assert tally.reads == 2 * 2 * len(reads)
    assert not tally.findings, tally.examples
