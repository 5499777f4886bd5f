"""`Queues`: the consume queues of a store, of whichever kind it keeps (design §4.1).

Unit files under `consumequeue/` (§4.3), BatchCQ files under `batchconsumequeue/` (§4.5), a RocksDB consume
queue (§4.7), and the ConsumeQueueExt files (§4.4); topics and queue ids are listed from their directories
and from topics.json.
"""

from __future__ import annotations

from functools import cached_property

from rmqstore.format.consumequeue import BCQ_UNIT_SIZE, CQ_UNIT_SIZE
from rmqstore.io.base import StoreFileSystem
from rmqstore.store.commitlog import CommitLog
from rmqstore.store.config import StoreConfig
from rmqstore.store.consumequeue import BatchConsumeQueue, ConsumeQueue, ConsumeQueueExt
from rmqstore.store.errors import StoreError, UnreadableFileError
from rmqstore.store.names import JAVA_INT_MAX, check_topic_dir_name, topic_dir_problem
from rmqstore.store.rocksdb import is_rocksdb, local_rocksdb
from rmqstore.store.rocksdb_cq import RocksConsumeQueue, RocksConsumeQueues
from rmqstore.store.segments import OpenFiles, list_entries, list_segments

CONSUMEQUEUE_DIR = "consumequeue"
ROCKSDB_CONSUMEQUEUE_DIR = "consumequeue_rocksdb"
"""Where 5.4+ keeps the RocksDB consume queue with `useSeparateStorePathForRocksdbCQ` (§4.7)."""
BATCH_CONSUMEQUEUE_DIR = "batchconsumequeue"
"""The queues of topics with attribute `queue.type=BatchCQ` (§4.5)."""
CONSUMEQUEUE_EXT_DIR = "consumequeue_ext"
"""ConsumeQueueExt files (`enableConsumeQueueExt`, §4.4)."""
Queue = ConsumeQueue | BatchConsumeQueue | RocksConsumeQueue
"""The kinds of consume queue a store has: unit files (§4.3), BatchCQ files (§4.5), a RocksDB (§4.7)."""


class Queues:
    """The consume queues of the store at `path` in `fs`, pointing into `log`.

    `layout_problems`: misnamed and unreadable queue files; `notes`: topic and queue directories left
    out (both part of `Store.problems`).
    """

    def __init__(self, fs: StoreFileSystem, path: str, files: OpenFiles, log: CommitLog,
                 config: StoreConfig) -> None:
        self.fs = fs
        self.path = path
        self._files = files
        self._log = log
        self._config = config
        self._queues: dict[tuple[str, int], Queue] = {}
        self.layout_problems: list[str] = []
        self.notes: list[str] = []

    def close(self) -> None:
        """Close the RocksDB consume queue when one was opened (queue files close with the store's)."""
        rocks = self.__dict__.pop("_rocks_queues", None)
        if rocks is not None:
            self._queues.clear()
            rocks.db.close()

    @property
    def _consumequeue_dir(self) -> str:
        return self.fs.join(self.path, CONSUMEQUEUE_DIR)

    @cached_property
    def _batch_topics(self) -> frozenset[str]:
        """Topics with a directory under `batchconsumequeue/` (§4.5): their queues are read there."""
        directory = self.fs.join(self.path, BATCH_CONSUMEQUEUE_DIR)
        return frozenset(e.name for e in list_entries(self.fs, directory) if e.is_dir)

    def _queues_dir(self, topic: str) -> str:
        """The directory holding `topic`'s queues: `batchconsumequeue/` for a BatchCQ topic (§4.5)."""
        root = BATCH_CONSUMEQUEUE_DIR if topic in self._batch_topics else CONSUMEQUEUE_DIR
        return self.fs.join(self.path, root, check_topic_dir_name(topic))

    def topics(self) -> list[str]:
        """Topics with a (batch) consume-queue directory or an entry in topics.json, sorted.

        Names that cannot be a directory inside the store (`..`, separators), entries of
        `consumequeue/` that are not directories (symlink loops, FIFOs) and an unreadable topics.json
        are left out and reported in `problems`.
        """
        names = set(self._batch_topics)
        rocks = self._rocks_queues
        for entry in [] if rocks is not None else list_entries(self.fs, self._consumequeue_dir):
            if entry.is_dir:
                names.add(entry.name)
            elif entry.special is not None:
                self._note(f"{entry.path}: {entry.special}, not a topic directory; ignored")
        names.update(rocks.topics() if rocks is not None else ())
        try:
            names.update(self._config.topic_configs())
        except StoreError as exc:
            self._note(f"{exc}; topics are taken from {CONSUMEQUEUE_DIR}/ only")
        good = []
        for name in sorted(names):
            problem = topic_dir_problem(name)
            if problem is None:
                good.append(name)
            else:
                self._note(f"topic {name!r} skipped: {problem}")
        return good

    def _note(self, problem: str) -> None:
        if problem not in self.notes:
            self.notes.append(problem)

    def queue_ids(self, topic: str) -> list[int]:
        """Queue ids that have a directory under `consumequeue/<topic>/` (`batchconsumequeue/`, §4.5), sorted.

        Entries that are not directories, or whose number is not a Java int, are reported in
        `problems`; so is a topic directory that cannot be listed (a symlink loop).
        """
        directory = self._queues_dir(topic)
        if self._rocks_queues is not None:
            return self._rocks_queues.queue_ids(topic)
        try:
            entries = list_entries(self.fs, directory)
        except UnreadableFileError as exc:
            self._note(f"{exc}; topic {topic!r} has no readable queues")
            return []
        ids = []
        for entry in entries:
            if not (entry.name.isascii() and entry.name.isdigit()):
                continue
            if entry.special is not None:
                self._note(f"{entry.path}: {entry.special}, not a queue directory; ignored")
            elif entry.is_dir and int(entry.name) > JAVA_INT_MAX:
                self._note(f"{entry.path}: queue id beyond Integer.MAX_VALUE; ignored")
            elif entry.is_dir:
                ids.append(int(entry.name))
        return sorted(ids)

    @cached_property
    def _rocks_queues(self) -> RocksConsumeQueues | None:
        """The queues of a RocksDB consume queue (§4.7, `storeType=defaultRocksDB`): `consumequeue/`, or
        `consumequeue_rocksdb/` (`useSeparateStorePathForRocksdbCQ`) when `consumequeue/` has no queue
        files; None for queue files."""
        separate = self.fs.join(self.path, ROCKSDB_CONSUMEQUEUE_DIR)
        if is_rocksdb(self.fs, self._consumequeue_dir):
            path = self._consumequeue_dir
        elif is_rocksdb(self.fs, separate) and not any(
                e.is_dir for e in list_entries(self.fs, self._consumequeue_dir)):
            path = separate
        else:
            return None
        feature = "the consume queue (storeType=defaultRocksDB)"
        return RocksConsumeQueues(local_rocksdb(self.fs, path, feature))

    def consume_queue(self, topic: str, queue_id: int) -> Queue:
        """The consume queue of (topic, queueId): a BatchConsumeQueue for a BatchCQ topic (§4.5), the
        RocksDB's queue in a RocksDB store (§4.7); empty (min = max = 0) when it has no units."""
        check_topic_dir_name(topic)
        if queue_id < 0:
            raise ValueError(f"queue id must be >= 0, got {queue_id}")
        queue = self._queues.get((topic, queue_id))
        if queue is None and self._rocks_queues is not None:
            queue = self._rocks_queues.queue(topic, queue_id, self._log.min_offset, self._log.max_offset)
            self._queues[(topic, queue_id)] = queue
        elif queue is None:
            directory = self.fs.join(self._queues_dir(topic), str(queue_id))
            segments, problems = list_segments(self.fs, [directory], skip_unreadable=True)
            batch = topic in self._batch_topics
            unit = BCQ_UNIT_SIZE if batch else CQ_UNIT_SIZE
            misnamed = [seg for seg in segments if seg.base_offset % unit]
            problems += [f"{seg.path}: name is not a multiple of {unit}; ignored" for seg in misnamed]
            segments = [seg for seg in segments if seg not in misnamed]
            self.layout_problems.extend(problems)
            kind = BatchConsumeQueue if batch else ConsumeQueue
            queue = kind(topic, queue_id, segments, self._files, self._log.min_offset, self._log.max_offset)
            self._queues[(topic, queue_id)] = queue
        return queue

    def consume_queue_ext(self, topic: str, queue_id: int) -> ConsumeQueueExt:
        """The ConsumeQueueExt files of (topic, queueId) (§4.4); none when the broker never wrote any."""
        directory = self.fs.join(self.path, CONSUMEQUEUE_EXT_DIR, check_topic_dir_name(topic), str(queue_id))
        segments, problems = list_segments(self.fs, [directory], skip_unreadable=True)
        self.layout_problems.extend(problems)
        return ConsumeQueueExt(segments, self._files)
