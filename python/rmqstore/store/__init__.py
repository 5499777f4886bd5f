"""A RocketMQ broker store opened read-only: segments, valid end, scans, lookups, queues, metadata."""

from rmqstore.store.commitlog import LogEnd
from rmqstore.store.consumequeue import UNIT_DTYPE, ConsumeQueue, tags_candidate_mask, tags_codes
from rmqstore.store.errors import (
    FAILFAST,
    PERMISSIVE,
    IndexUnavailableError,
    InvalidTopicError,
    StoreCorruptionError,
    StoreError,
    StoreLayoutError,
    UnknownNameError,
    UnreadableFileError,
)
from rmqstore.store.index import IndexFileInfo
from rmqstore.store.segments import Segment
from rmqstore.store.shape import Shape, UnsupportedShapeError
from rmqstore.store.stats import StoreStats
from rmqstore.store.store import Store

__all__ = [
    "FAILFAST",
    "PERMISSIVE",
    "UNIT_DTYPE",
    "ConsumeQueue",
    "IndexFileInfo",
    "IndexUnavailableError",
    "InvalidTopicError",
    "LogEnd",
    "Segment",
    "Shape",
    "Store",
    "StoreCorruptionError",
    "StoreError",
    "StoreLayoutError",
    "StoreStats",
    "UnknownNameError",
    "UnreadableFileError",
    "UnsupportedShapeError",
    "tags_candidate_mask",
    "tags_codes",
]
