"""Index files built the way `IndexService.buildIndex` does (spec §5.4, §5.5, §5.7).

For every dispatched record the last index file is fetched (a new one is created when there is
none or the last is full); records below its endPhyOffset and ROLLBACK records are skipped; then
`topic#UNIQ_KEY` and `topic#<token>` for each non-empty KEYS token are put, rolling over to a new
file whenever a put fails. A new file starts from the previous file's end offset and time and is
named by its creation time (local `yyyyMMddHHmmssSSS`; here: the store time of the record that
caused it, which is when a broker dispatching in real time would create it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from rmqstore.format.indexfile import INDEX_HEADER_SIZE, IndexFileBuilder, index_file_size, index_key
from rmqstore.format.layout import SYSFLAG_TRANSACTION_MASK, TRANSACTION_ROLLBACK
from rmqstore.format.record import split_keys
from rmqstore.writer.files import index_file_name, write_presized


@dataclass(frozen=True)
class WrittenIndexFile:
    """An index file on disk with the header values the checkpoint and `info` care about."""

    path: Path
    end_timestamp: int
    full: bool


class IndexWriter:
    """Feeds records to `IndexFileBuilder`s and writes each file when it fills up or on `close`."""

    def __init__(self, directory: Path, hash_slots: int, index_entries: int) -> None:
        self.directory = directory
        self.hash_slots = hash_slots
        self.index_entries = index_entries
        self.written: list[WrittenIndexFile] = []
        self._builder: IndexFileBuilder | None = None
        self._name_ms = 0
        directory.mkdir(parents=True, exist_ok=True)

    def dispatch(
        self,
        topic: str,
        phy: int,
        store_timestamp: int,
        sys_flag: int,
        uniq_key: str | None,
        keys: str | None,
    ) -> None:
        """Index one record (§5.4): UNIQ_KEY first, then each non-empty KEYS token."""
        builder = self._last_file(store_timestamp)
        if phy < builder.header.end_phy_offset:
            return
        if sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_ROLLBACK:
            return
        if uniq_key is not None:
            self._put(index_key(topic, uniq_key), phy, store_timestamp)
        for token in split_keys(keys) or ():
            self._put(index_key(topic, token), phy, store_timestamp)

    @property
    def last_full_end_timestamp(self) -> int:
        """endTimestamp of the newest full (flushed) file: the checkpoint's indexMsgTimestamp (§6.1)."""
        full = [f.end_timestamp for f in self.written if f.full]
        return full[-1] if full else 0

    def close(self, *, flushed: bool = True) -> None:
        """Write the current (not full) file.

        `flushed` (clean shutdown): `IndexFile.flush` writes the header counters, so a file that
        got no entry has indexCount 1 on disk; unflushed (crash) it keeps 0 (§5.1).
        """
        if self._builder is not None:
            self._write(self._builder, full=False, flushed=flushed)
            self._builder = None

    def _put(self, key: str, phy: int, store_timestamp: int) -> None:
        while not self._builder.put_key(key, phy, store_timestamp):
            self._roll(store_timestamp)

    def _last_file(self, now_ms: int) -> IndexFileBuilder:
        if self._builder is None:
            self._create(now_ms, 0, 0)
        elif self._builder.is_full:
            self._roll(now_ms)
        return self._builder

    def _roll(self, now_ms: int) -> None:
        previous = self._builder
        self._write(previous, full=True)
        self._create(now_ms, previous.header.end_phy_offset, previous.header.end_timestamp)

    def _create(self, now_ms: int, prev_end_phy: int, prev_end_timestamp: int) -> None:
        self._name_ms = max(now_ms, self._name_ms + 1)
        self._builder = IndexFileBuilder(
            self.hash_slots, self.index_entries, prev_end_phy, prev_end_timestamp
        )

    def _write(self, builder: IndexFileBuilder, *, full: bool, flushed: bool = True) -> None:
        path = self.directory / index_file_name(self._name_ms)
        data = builder.to_bytes()
        header = builder.header
        if flushed and header.index_count == 0:
            data = replace(header, index_count=1).to_bytes() + data[INDEX_HEADER_SIZE:]
        write_presized(path, data, index_file_size(self.hash_slots, self.index_entries))
        self.written.append(WrittenIndexFile(path, builder.header.end_timestamp, full))
