"""A stand-in for a running broker: appends to a store in the order and granularity a broker does,
but slowly and in pieces, so a reader tailing the files sees every intermediate state.

Order per message, like `CommitLog.doAppend` + the dispatcher (spec §2.1, §2.6, §4.1, §6.2):
`abort` exists while "running"; segments are pre-sized and the next one is pre-allocated (all zeros);
a record is written in several pieces with a flush and a sleep between them (a reader sees a prefix);
a record that does not fit (length + 8 > bytes left) is preceded by a BLANK closing the segment;
the consume-queue unit is written only after the whole record. Every finished message is appended
to a manifest (JSON lines) that tests compare the stream's output with.

Run as a script (a separate process from the Spark query): see `main`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import time
from pathlib import Path

from rmqstore.format.consumequeue import CQ_UNIT_SIZE, encode_unit
from rmqstore.format.javahash import tags_code
from rmqstore.format.layout import END_FILE_MIN_BLANK_LENGTH
from rmqstore.format.record import encode_blank, encode_record
from rmqstore.store.names import segment_file_name

STORE_HOST = "127.0.0.1:10911"
BORN_HOST = "10.0.0.7:53010"
CQ_SEGMENT_SIZE = 1000 * CQ_UNIT_SIZE


class LiveBroker:
    """Appends messages to `root` piece by piece; `close(clean=True)` removes `abort` like a shutdown."""

    def __init__(self, root: Path, segment_size: int, *, seed: int = 7, pieces: int = 3,
                 piece_sleep: float = 0.002) -> None:
        self.root = root
        self.segment_size = segment_size
        self.rng = random.Random(seed)
        self.pieces = pieces
        self.piece_sleep = piece_sleep
        (root / "commitlog").mkdir(parents=True, exist_ok=True)
        if any((root / "commitlog").iterdir()):
            raise FileExistsError(f"{root} already has a commit log; LiveBroker only starts new stores")
        (root / "config").mkdir(exist_ok=True)
        (root / "abort").write_text(str(os.getpid()))
        self.segment_base = self.position = 0
        self._preallocate(self.segment_base)
        self._preallocate(self.segment_base + segment_size)
        self.queue_offsets: dict[tuple[str, int], int] = {}

    def _segment_path(self, base: int) -> Path:
        return self.root / "commitlog" / segment_file_name(base)

    def _preallocate(self, base: int) -> None:
        path = self._segment_path(base)
        if not path.exists():
            with open(path, "wb") as handle:
                handle.truncate(self.segment_size)

    def _write(self, path: Path, position: int, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, data, position)
        finally:
            os.close(fd)

    def append(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str],
               *, torn: bool = False) -> dict:
        """Write one message (or, with `torn`, only a prefix of it, as a crash would leave it)."""
        queue_offset = self.queue_offsets.get((topic, queue_id), 0)
        now = int(time.time() * 1000)

        def encode(phy: int) -> bytes:
            return encode_record(topic=topic, queue_id=queue_id, body=body, properties=properties,
                                 queue_offset=queue_offset, physical_offset=phy, born_timestamp=now,
                                 store_timestamp=now, born_host=BORN_HOST, store_host=STORE_HOST)

        record = encode(self.position)
        left = self.segment_base + self.segment_size - self.position
        if len(record) + END_FILE_MIN_BLANK_LENGTH > left:
            blank_at = self.position - self.segment_base
            self._write(self._segment_path(self.segment_base), blank_at, encode_blank(left))
            self.segment_base += self.segment_size
            self.position = self.segment_base
            self._preallocate(self.segment_base)
            self._preallocate(self.segment_base + self.segment_size)
            record = encode(self.position)
        path, rel = self._segment_path(self.segment_base), self.position - self.segment_base
        cuts = sorted(self.rng.sample(range(1, len(record)), self.pieces - 1))
        # Always stop once inside the properties: header, body and lengths there, properties zeros.
        cuts = sorted({*cuts, len(record) - 3})
        bounds = [0, *cuts, len(record)]
        if torn:
            bounds = bounds[:-1]
        for lo, hi in itertools.pairwise(bounds):
            self._write(path, rel + lo, record[lo:hi])
            time.sleep(self.piece_sleep)
        entry = {"topic": topic, "queueId": queue_id, "queueOffset": queue_offset,
                 "commitLogOffset": self.position, "storeSize": len(record),
                 "uniqKey": properties.get("UNIQ_KEY"), "body": body.hex()}
        self._pending = (path, rel, record, bounds[-1], properties.get("TAGS"), entry)
        if not torn:
            self.finish(dispatch=True)
        return entry

    def finish(self, *, dispatch: bool) -> None:
        """Write the rest of the last record; with `dispatch` also its consume-queue unit (§4.1)."""
        path, rel, record, written, tags, entry = self._pending
        if written < len(record):
            self._write(path, rel + written, record[written:])
            self._pending = (path, rel, record, len(record), tags, entry)
        if dispatch:
            topic, queue_id, queue_offset = entry["topic"], entry["queueId"], entry["queueOffset"]
            self._write_unit(topic, queue_id, queue_offset, self.position, len(record), tags)
            self.queue_offsets[(topic, queue_id)] = queue_offset + 1
            self.position += len(record)
            entry["doneAt"] = time.time()

    def _write_unit(self, topic: str, queue_id: int, queue_offset: int, phy: int, size: int,
                    tags: str | None) -> None:
        directory = self.root / "consumequeue" / topic / str(queue_id)
        directory.mkdir(parents=True, exist_ok=True)
        byte = queue_offset * CQ_UNIT_SIZE
        base = byte - byte % CQ_SEGMENT_SIZE
        path = directory / segment_file_name(base)
        if not path.exists():
            with open(path, "wb") as handle:
                handle.truncate(CQ_SEGMENT_SIZE)
        self._write(path, byte - base, encode_unit(phy, size, tags_code(tags)))

    def close(self, *, clean: bool) -> None:
        if clean:
            (self.root / "abort").unlink()


def message(index: int, rng: random.Random) -> tuple[str, int, bytes, dict[str, str]]:
    """The index-th test message: topic, queue, body (varied length) and properties."""
    topic = "TopicA" if index % 3 else "TopicB"
    body = f"message-{index:06d}|".encode() + rng.randbytes(rng.randrange(10, 400))
    props = {"UNIQ_KEY": f"UNIQ{index:010d}", "KEYS": f"order-{index}", "TAGS": f"tag{index % 4}",
             "WAIT": "true"}
    return topic, index % 4, body, props


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--manifest", required=True, type=Path)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--segment-size", type=int, required=True)
    parser.add_argument("--sleep", type=float, default=0.01, help="pause between messages, seconds")
    parser.add_argument("--piece-sleep", type=float, default=0.002)
    parser.add_argument("--first", type=int, default=0, help="index of the first message")
    parser.add_argument("--torn-tail", action="store_true", help="end with a half-written message (a crash)")
    args = parser.parse_args()
    broker = LiveBroker(args.store, args.segment_size, piece_sleep=args.piece_sleep)
    rng = random.Random(args.first)
    with open(args.manifest, "a") as manifest:
        for index in range(args.first, args.first + args.messages):
            manifest.write(json.dumps(broker.append(*message(index, rng))) + "\n")
            manifest.flush()
            time.sleep(args.sleep)
        if args.torn_tail:
            broker.append(*message(args.first + args.messages, rng), torn=True)
    broker.close(clean=not args.torn_tail)


if __name__ == "__main__":
    main()
