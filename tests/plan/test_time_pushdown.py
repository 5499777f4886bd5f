"""storeTimestamp pushdown returns what a filtered scan returns, also after the broker clock stepped
back by hours (in an older segment and inside the active one), and the time summary it needs is
walked once and then read from the cache."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from plan_helpers import run_plan, scan_rows

from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.plan.planner import PlanSettings, plan_read
from rmqstore.plan.predicates import Compare
from rmqstore.store import Store, timeline
from rmqstore.writer import MessageSpec, StoreWriter

COLUMNS = ["commitLogOffset", "storeTimestamp"]
SEGMENT = 8 * 1024
T0 = 1_700_000_000_000
HOUR = 3_600_000


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """Records 1 s apart; the clock steps back 3 h at record 150 (an older segment) and 2 h inside the
    last segment. Returns the store and the offsets of the two first records after a step."""
    path = tmp_path_factory.mktemp("stepped") / "store"
    steps = []
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 64, index_hash_slots=64,
                     index_entries=256, seed=3) as writer:
        clock, i = T0, 0
        while True:
            in_segment = writer.position % SEGMENT
            if i == 150 or (i >= 370 and not steps[1:] and SEGMENT // 4 <= in_segment < SEGMENT // 2):
                clock -= 3 * HOUR if i == 150 else 2 * HOUR
                steps.append(writer.position)
            writer.append(MessageSpec(topic="T", body=bytes(150), keys=f"k{i}", store_timestamp=clock))
            clock, i = clock + 1000, i + 1
            if steps[1:] and writer.position - steps[1] > 2000:
                break
    return path, steps[0], steps[1]


def _brute(rows: list[dict], begin_ms: int, end_ms: int) -> list[int]:
    return sorted(r["commitLogOffset"] for r in rows
                  if begin_ms <= r["storeTimestamp"].timestamp() * 1000 <= end_ms)


def _window(begin_ms: int, end_ms: int) -> list[Compare]:
    return [Compare("storeTimestamp", ">=", begin_ms * 1000), Compare("storeTimestamp", "<=", end_ms * 1000)]


def test_the_steps_are_in_an_older_and_in_the_active_segment(stepped: tuple[Path, int, int]) -> None:
    path, older, active = stepped
    with Store.open(str(path)) as store:
        last = store.log.segment_at(store.max_offset - 1)
        assert last is not None and last.contains(active) and active != last.base_offset
        assert older < last.base_offset


@pytest.mark.parametrize("max_runs", [timeline.MAX_RUNS, 1])
def test_time_windows_return_what_a_filtered_scan_returns(stepped: tuple[Path, int, int], max_runs: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows around the steps, on both sides of them, and random ones; `max_runs` 1 makes every
    segment with a step an unordered run (walked, not bisected)."""
    monkeypatch.setattr(timeline, "MAX_RUNS", max_runs)
    path = stepped[0]
    rows = scan_rows(path, COLUMNS)
    times = sorted({int(r["storeTimestamp"].timestamp() * 1000) for r in rows})
    rng = random.Random(11)
    windows = [(t - d, t + e) for t in (times[0], T0, T0 + 149_000, T0 + 150_000, times[-1])
               for d, e in ((0, 0), (500, 500), (10_000, 20_000), (4 * HOUR, 0), (0, 4 * HOUR))]
    windows += [tuple(sorted(rng.sample(range(times[0] - 5000, times[-1] + 5000), 2))) for _ in range(20)]
    for begin_ms, end_ms in windows:
        got, plan = run_plan(path, _window(begin_ms, end_ms), COLUMNS)
        assert got == _brute(rows, begin_ms, end_ms), (begin_ms, end_ms)
        assert plan.access[0] in ("range", "scan", "empty")


def test_a_window_after_a_step_is_found_in_the_active_segment(stepped: tuple[Path, int, int]) -> None:
    """The records stored after the 2 h step (inside the active segment) are earlier than every
    record before them: the window of their times reads just them."""
    path, _, active = stepped
    rows = scan_rows(path, COLUMNS)
    after = [r for r in rows if r["commitLogOffset"] >= active]
    begin_ms = int(after[0]["storeTimestamp"].timestamp() * 1000)
    end_ms = int(after[-1]["storeTimestamp"].timestamp() * 1000)
    got, plan = run_plan(path, _window(begin_ms, end_ms), COLUMNS)
    assert got == _brute(rows, begin_ms, end_ms) == [r["commitLogOffset"] for r in after]
    with Store.open(str(path)) as store:
        assert plan.access == ["range"]
        assert [(t.start, t.end) for t in plan.tasks] == [(active, store.max_offset)]


def test_the_time_summary_is_walked_once_then_read_from_the_cache(stepped: tuple[Path, int, int]) -> None:
    path = stepped[0]
    window = _window(T0 + 20_000, T0 + 80_000)
    read = []
    for _ in range(2):
        with Store.open(str(path)) as store:
            _ = store.max_offset
            store.stats.reset()
            plan_read([store], [window], PlanSettings())
            read.append(store.stats.bytes_read)
            log_bytes = store.max_offset - store.min_offset
    cold, warm = read
    assert cold >= log_bytes  # every segment's store times walked once
    assert warm < cold / 5  # then bisections in the cached runs (a few resync windows each)
