"""Local files: read-only memory maps, clipped ranged reads, listings; nothing is ever written."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np
import pytest

from helpers.page_cache import drop_page_cache, page_cache_droppable, resident_bytes
from rmqstore.io import IOStats, LocalFileSystem, resolve_location

COLD_FILE_BYTES = 16 << 20


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.bin").write_bytes(bytes(range(200)))
    (tmp_path / "d" / "a.bin").write_bytes(b"")
    (tmp_path / "d" / "sub").mkdir()
    return tmp_path


def test_read_returns_read_only_views_clipped_to_the_file(tree):
    fs = LocalFileSystem()
    handle = fs.open(str(tree / "d" / "b.bin"))
    assert handle.size == 200 and handle.zero_copy
    view = handle.read(10, 5)
    assert view.dtype == np.uint8 and bytes(view) == bytes(range(10, 15))
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1
    assert bytes(handle.read(195, 100)) == bytes(range(195, 200))
    assert len(handle.read(500, 10)) == 0
    with pytest.raises(ValueError, match="invalid read range"):
        handle.read(-1, 3)
    assert fs.stats.bytes_read == 10 and fs.stats.read_calls == 3


def test_read_ranges_concatenates_clipped_ranges_and_counts_them(tree):
    fs = LocalFileSystem()
    handle = fs.open(str(tree / "d" / "b.bin"))
    data = handle.read_ranges([10, 0, 198], [3, 1, 50])
    assert bytes(data) == bytes([10, 11, 12, 0, 198, 199])
    assert (fs.stats.bytes_read, fs.stats.read_calls) == (6, 3)
    assert fs.stats.paths_read == {str(tree / "d" / "b.bin")}
    assert len(handle.read_ranges([], [])) == 0 and fs.stats.read_calls == 3
    with pytest.raises(ValueError):
        handle.read_ranges([5], [-1])
    assert not data.flags.writeable
    assert len(handle.read_ranges([500, 200], [10, 10])) == 0


def test_read_at_is_one_positioned_read_of_the_bytes_asked_for(tree):
    fs = LocalFileSystem()
    handle = fs.open(str(tree / "d" / "b.bin"))
    data = handle.read_at(10, 5)
    assert bytes(data) == bytes(range(10, 15)) and not data.flags.writeable
    assert (fs.stats.bytes_read, fs.stats.read_calls) == (5, 1)
    assert not np.shares_memory(data, handle.read(0, handle.size))  # a fresh array, not a view of the map
    assert bytes(handle.read_at(198, 10)) == bytes([198, 199])


@pytest.fixture
def cold_file(tmp_path: Path) -> Path:
    """16 MiB of random bytes on disk, none of them in the page cache."""
    path = tmp_path / "cold.bin"
    path.write_bytes(np.random.default_rng(5).integers(0, 256, COLD_FILE_BYTES, dtype=np.uint8).tobytes())
    if not page_cache_droppable(tmp_path):
        pytest.skip("this file system keeps its files in memory (tmpfs): no page cache to drop")
    drop_page_cache([path])
    assert resident_bytes([path]) == 0
    return path


def test_point_reads_bring_in_only_the_pages_they_read(cold_file):
    """Positioned reads from a descriptor advised random: no read-ahead around them (a page fault in the
    map would read the read-ahead window around the page)."""
    handle = LocalFileSystem().open(str(cold_file))
    at = COLD_FILE_BYTES // 2 + 100
    assert bytes(handle.read_at(at, 300)) == cold_file.read_bytes()[at : at + 300]
    drop_page_cache([cold_file])  # reading the whole file to compare brought it all in
    handle.read_at(at, 300)
    handle.read_ranges([1 << 20, 5 << 20], [1000, 1000])
    assert resident_bytes([cold_file]) == 3 * mmap.PAGESIZE


def test_a_random_access_map_brings_in_only_the_pages_touched(cold_file):
    view = LocalFileSystem().open(str(cold_file), random_access=True).read(0, COLD_FILE_BYTES)
    assert int(view[COLD_FILE_BYTES // 2]) + int(view[3 << 20]) >= 0  # touch two pages
    assert resident_bytes([cold_file]) == 2 * mmap.PAGESIZE


def test_read_ranges_of_a_file_that_shrank_names_file_and_offset(tmp_path):
    """The size is taken at open; bytes gone since then end in an OSError, not in zeros."""
    path = tmp_path / "shrinks.bin"
    path.write_bytes(bytes(range(200)))
    handle = LocalFileSystem().open(str(path))
    os.truncate(path, 100)
    assert bytes(handle.read_ranges([10, 90], [5, 5])) == bytes([10, 11, 12, 13, 14, 90, 91, 92, 93, 94])
    with pytest.raises(OSError, match=f"{path}: short read at offset 100"):  # where the bytes end now
        handle.read_ranges([10, 95, 20], [5, 10, 5])


def test_ranges_after_a_compiled_read_that_stopped_are_read_again(tree, monkeypatch):
    """Where the compiled pread loop stops (an interrupted or failed read), the remaining ranges are
    read by os.preadv, which retries interruptions and raises real errors."""
    from rmqstore.io import local

    def stops_at_range_1(fd, starts, lengths, out):
        out[:] = 0xEE
        return -1 - 1

    monkeypatch.setattr(local, "pread_ranges", stops_at_range_1)
    handle = LocalFileSystem().open(str(tree / "d" / "b.bin"))
    data = handle.read_ranges([10, 0, 198], [3, 1, 50])
    assert bytes(data) == bytes([0xEE, 0xEE, 0xEE, 0, 198, 199])  # range 0 stays as the loop left it


def test_views_survive_close(tree):
    handle = LocalFileSystem().open(str(tree / "d" / "b.bin"))
    view = handle.read(0, 200)
    handle.close()
    assert bytes(view[:3]) == b"\x00\x01\x02"


def test_empty_file_maps_to_empty_reads(tree):
    handle = LocalFileSystem().open(str(tree / "d" / "a.bin"))
    assert handle.size == 0 and len(handle.read(0, 10)) == 0


def test_listing_info_exists_size(tree):
    fs = LocalFileSystem()
    entries = fs.list_dir(str(tree / "d"))
    assert [(e.name, e.is_dir, e.size) for e in entries] == [("a.bin", False, 0), ("b.bin", False, 200),
                                                              ("sub", True, 0)]
    assert fs.list_dir(str(tree / "missing")) == []
    assert fs.exists(str(tree / "d" / "b.bin")) and not fs.exists(str(tree / "nope"))
    assert fs.is_dir(str(tree / "d" / "sub")) and not fs.is_dir(str(tree / "d" / "b.bin"))
    assert fs.size(str(tree / "d" / "b.bin")) == 200
    with pytest.raises(FileNotFoundError, match="nope"):
        fs.size(str(tree / "nope"))
    with pytest.raises(FileNotFoundError):
        fs.open(str(tree / "nope"))
    assert fs.read_bytes(str(tree / "d" / "b.bin")) == bytes(range(200))


def test_files_are_opened_read_only(tree, monkeypatch):
    flags_seen = []
    real_open = os.open

    def spy(path, flags, *args, **kwargs):
        flags_seen.append(flags)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    LocalFileSystem().open(str(tree / "d" / "b.bin")).read(0, 1)
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC
    assert flags_seen and all(f & writing == 0 for f in flags_seen)


def test_resolve_location_local_and_file_uri(tree):
    stats = IOStats()
    fs, path = resolve_location(str(tree / "d"), stats=stats)
    assert isinstance(fs, LocalFileSystem) and path == str(tree / "d") and fs.stats is stats
    fs, path = resolve_location(f"file://{tree}/d")
    assert isinstance(fs, LocalFileSystem) and path == f"{tree}/d"


def test_stats_reset_keeps_the_shared_object(tree):
    fs = LocalFileSystem()
    fs.open(str(tree / "d" / "b.bin")).read(0, 7)
    stats = fs.stats
    stats.reset()
    assert stats.bytes_read == 0 and stats.paths_read == set()
    fs.open(str(tree / "d" / "b.bin")).read(0, 3)
    assert fs.stats is stats and stats.bytes_read == 3
