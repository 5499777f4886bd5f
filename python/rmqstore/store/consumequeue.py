"""One consume queue `consumequeue/<topic>/<queueId>/` read-only (§4.1-§4.3), or a BatchConsumeQueue
`batchconsumequeue/<topic>/<queueId>/` (§4.5) behind the same interface.

Queue offset q lives at byte q*20 of the queue's own address space, in the segment named by the
offset of its first byte. A unit is valid when phyOffset >= 0 and size > 0 (recovery's test); the
queue runs to its last valid unit that `UNIT_DAMAGE_LOOKAHEAD` invalid units follow, so an invalid unit
before it is damage, not the queue's end (damage.md §2, §3); pre-blank fillers are skipped; units that
point before the commit log's min offset are gone (retention), units at or past the log's valid end are
truncated by recovery, so neither is returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import NamedTuple

import numpy as np

from rmqstore.format.consumequeue import (
    BCQ_UNIT_SIZE,
    CQ_DTYPE,
    CQ_UNIT_SIZE,
    EXT_ADDRESS_MAX,
    UNIT_DAMAGE_LOOKAHEAD,
    ext_address_offset,
    extend_queue_end,
    is_filler,
    parse_batch_units,
    parse_ext_unit,
    parse_units,
    valid_batch_unit_count,
    valid_unit_count,
    valid_units_mask,
)
from rmqstore.format.javahash import tags_code
from rmqstore.format.record import SCHEDULE_TOPIC
from rmqstore.store.names import SEGMENT_NAME_DIGITS, segment_file_name
from rmqstore.store.segments import OpenFiles, Segment

FIRST_WINDOW_UNITS = 1024
"""Units (20 KiB) of the first read of a queue file searched for its first or last unit; each further
read is twice as long, so a search reads about what the file holds, not the zeros the broker
pre-allocated past it (a 6 MB file per queue: design §4.5). Finding the ends of the remote bench's 32
queues (216 to 22,410 units, 3.4 MB) downloads 6.0 MB in 89 requests; 4,096 units growing x4
downloaded 9.8 MB in 48, and a store of small queues paid 80 KiB for each."""
UNIT_DTYPE = np.dtype([("queue_offset", "<i8"), ("phy", "<i8"), ("size", "<i4"), ("tags_code", "<i8")])
"""Units as returned by `ConsumeQueue.units`: the queue offset plus the three unit fields."""


class UnitDamage(NamedTuple):
    """A unit inside a queue's range that points at no record it could hold: invalid, or outside the
    log's [min, max) although valid units inside it follow (damage.md §3)."""

    path: str
    position: int
    """Byte offset of the unit in its file."""
    queue_offset: int
    cause: str


def tags_codes(tags: Iterable[str]) -> np.ndarray:
    """The tagsCodes (Java hash of the TAGS string, §4.2) of the given tag strings."""
    return np.array(sorted({tags_code(t) for t in tags}), dtype=np.int64)


def tags_candidate_mask(topic: str, units: np.ndarray, tags: Iterable[str]) -> np.ndarray:
    """Units whose record may carry one of `tags`; callers still confirm TAGS on the record.

    Hashes collide, so a match is a candidate only. A tagsCode that is not a tag hash cannot be
    ruled out: ConsumeQueueExt addresses (§4.4), and every unit of `SCHEDULE_TOPIC_XXXX` (its
    tagsCode is a delivery time, §4.2).
    """
    if topic == SCHEDULE_TOPIC:
        return np.ones(len(units), dtype=bool)
    codes = units["tags_code"]
    return np.isin(codes, tags_codes(tags)) | (codes <= EXT_ADDRESS_MAX)


class _QueueFiles:
    """The files of one (topic, queueId) and the commit log's [min_offset, max_offset) bounding its units."""

    def __init__(self, topic: str, queue_id: int, segments: list[Segment], files: OpenFiles,
                 log_min_offset: int, log_max_offset: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.segments = segments
        self._files = files
        self._log_min = log_min_offset
        self._log_max = log_max_offset

    def file_units(self, seg: Segment) -> np.ndarray:
        raise NotImplementedError

    def _files_bytes(self) -> bytes:
        """Every byte of the queue's files, in order (`stored_units`, for `verify`)."""
        return b"".join(self._files.get(seg.path).read(0, seg.size).tobytes() for seg in self.segments)

    def units_from_phy(self, first_phy: int) -> np.ndarray:
        """The queue's units pointing at or after `first_phy` (and maybe some before): its last files,
        read backwards to the first file holding a unit below `first_phy` (units follow log order
        along a queue; one out of order only leaves a segment uncovered: scanned, never missed)."""
        parts = []
        for seg in reversed(self.segments):
            units = self.file_units(seg)
            parts.append(units)
            if len(units) and units["phy"][0] < first_phy:
                break
        parts.reverse()
        return np.concatenate(parts) if parts else np.empty(0, dtype=UNIT_DTYPE)


class ConsumeQueue(_QueueFiles):
    """Units of one (topic, queueId), bounded by the commit log's [min_offset, max_offset)."""

    def __init__(self, topic: str, queue_id: int, segments: list[Segment], files: OpenFiles,
                 log_min_offset: int, log_max_offset: int) -> None:
        super().__init__(topic, queue_id, segments, files, log_min_offset, log_max_offset)
        self._kept: dict[str, np.ndarray] = {}
        """A remote file's units read while searching for its end (`_live_units`), by path:
        later reads inside them are served from here, not downloaded again."""

    def __repr__(self) -> str:
        return f"ConsumeQueue({self.topic!r}, {self.queue_id}, [{self.min_offset}, {self.max_offset}))"

    @cached_property
    def max_offset(self) -> int:
        """One past the last unit that is valid and points before the log's valid end."""
        for seg in reversed(self.segments):
            live = self._live_units(seg)
            if len(live) == 0:
                continue
            # Phy offsets grow along a queue; a unit at/after the log end was truncated by recovery.
            reaching = np.flatnonzero((valid_units_mask(live) & (live["phy"] < self._log_max))
                                      | is_filler(live))
            if reaching.size:
                return seg.base_offset // CQ_UNIT_SIZE + int(reaching[-1]) + 1
        return self._first_offset

    @cached_property
    def min_offset(self) -> int:
        """The first unit that is not a filler and points at or after the log's min offset (§4.3)."""
        end = self.max_offset
        for seg in self.segments:
            first = seg.base_offset // CQ_UNIT_SIZE
            if first >= end:
                break
            for at, units in self._windows(seg, min(seg.size // CQ_UNIT_SIZE, end - first)):
                usable = np.flatnonzero(~is_filler(units) & (units["phy"] >= self._log_min)
                                        & (units["size"] > 0))
                if usable.size:
                    return first + at + int(usable[0])
        return end

    def end_bound(self, upto: int | None = None) -> int:
        """One past the queue's last unit, or at least `upto` when the queue reaches it, without
        reading the units: files before the last are full (the broker starts a file when the one
        before is full, §4.3); in the last file, valid units are followed by the zeros it was
        pre-allocated with, so one unit read tells whether the queue reaches `upto`, and a bisection
        (log2 of the units before `upto`, one unit read per step) where it ends. Units past the log's
        end count too: a bound for planning (`max_offset` is the queue's end)."""
        if not self.segments:
            return 0
        last = self.segments[-1]
        first = last.base_offset // CQ_UNIT_SIZE
        lo, hi = 0, last.size // CQ_UNIT_SIZE
        if upto is not None:
            hi = max(0, min(hi, upto - first))
        if not hi or self._valid_at(last, hi - 1):
            return first + hi
        hi -= 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._valid_at(last, mid):
                lo = mid + 1
            else:
                hi = mid
        return first + lo

    def unit_span(self) -> tuple[int, int]:
        """Queue offsets [first, end) the queue's files hold: the first file's first unit to the last
        file's end (units not read: for planning bounds)."""
        if not self.segments:
            return 0, 0
        return self.segments[0].base_offset // CQ_UNIT_SIZE, self.segments[-1].end_offset // CQ_UNIT_SIZE

    def stored_units(self) -> tuple[int, np.ndarray]:
        """(queue offset of the first, every unit of the files up to the queue's end (damage.md §2),
        fillers, invalid units and units outside the log included, as stored) for `verify`."""
        data = self._files_bytes()
        units = parse_units(data[: len(data) // CQ_UNIT_SIZE * CQ_UNIT_SIZE])
        return self._first_offset, units[: extend_queue_end(units, 0, -1)[0] + 1]

    def _valid_at(self, seg: Segment, unit: int) -> bool:
        """The unit at index `unit` of a segment is valid (phyOffset >= 0, size > 0): one unit read."""
        return valid_unit_count(self._segment_units(seg, unit, 1, point=True)) == 1

    def units_from_phy(self, first_phy: int) -> np.ndarray:
        """`units` from the first one pointing at or after `first_phy` (maybe some before), found by a
        bisection over [min_offset, max_offset) reading one unit per step (design §4.5): units follow log
        order along a queue, so a valid unit below `first_phy` has only such units before it. An invalid
        unit counts as past it (more units read, none missed); one out of order only leaves a segment
        uncovered: scanned, never missed."""
        lo, hi = self.min_offset, self.max_offset
        if first_phy <= self._log_min:
            return self.units(lo, hi)
        while lo < hi:
            mid = (lo + hi) // 2
            byte = mid * CQ_UNIT_SIZE
            seg = next((s for s in self.segments if s.contains(byte)), None)  # None: no file holds it
            unit = self._segment_units(seg, (byte - seg.base_offset) // CQ_UNIT_SIZE, 1, point=True) \
                if seg is not None else None
            if unit is not None and valid_unit_count(unit) == 1 and unit["phy"][0] < first_phy:
                lo = mid + 1
            else:
                hi = mid
        return self.units(lo, self.max_offset)

    @property
    def _first_offset(self) -> int:
        return self.segments[0].base_offset // CQ_UNIT_SIZE if self.segments else 0

    def units(self, start: int | None = None, end: int | None = None, *,
              tags: Iterable[str] | None = None) -> np.ndarray:
        """Units with queue offset in [start, end) ∩ [min_offset, max_offset), as `UNIT_DTYPE`.

        Fillers, invalid units and units pointing outside the log's [min, max) are left out. With
        `tags`, only units whose tagsCode may match (see `tags_candidate_mask`).
        """
        lo = self.min_offset if start is None else max(start, self.min_offset)
        hi = self.max_offset if end is None else min(end, self.max_offset)
        return self.slice_units(lo, hi, tags=tags)

    def slice_units(self, start: int, end: int, *, tags: Iterable[str] | None = None,
                    damage: list[UnitDamage] | None = None) -> np.ndarray:
        """`units(start, end, tags=tags)` of a slice already inside [min_offset, max_offset) (a plan's,
        made on the same log snapshot): reads the slice's units and nothing else of the queue (finding
        the bounds reads the queue's first and last files). The damaged units inside the queue's bounds
        (invalid, or pointing outside the log, with valid units after them: damage.md §3) are left out
        and appended to `damage` when given."""
        parts = []
        for seg in self.segments:  # a missing file, or the partial unit a cut file ends in, is skipped
            seg_first = seg.base_offset // CQ_UNIT_SIZE
            a, b = max(start, seg_first), min(end, seg.end_offset // CQ_UNIT_SIZE)
            if a >= b:
                continue
            raw = self._segment_units(seg, a - seg_first, b - a)
            out = np.empty(len(raw), dtype=UNIT_DTYPE)
            out["queue_offset"] = np.arange(a, a + len(raw), dtype=np.int64)
            out["phy"] = raw["phy"]
            out["size"] = raw["size"]
            out["tags_code"] = raw["tags_code"]
            parts.append(out)
        units = np.concatenate(parts) if parts else np.empty(0, dtype=UNIT_DTYPE)
        inside = valid_units_mask(units) & (units["phy"] >= self._log_min) & (units["phy"] < self._log_max)
        keep = inside & ~is_filler(units)
        suspect = units[~inside & ~is_filler(units)]
        if damage is not None and len(suspect):  # the bounds are read only for a suspect unit
            q = suspect["queue_offset"]
            damage.extend(self._damage(suspect[(q >= self.min_offset) & (q < self.max_offset)]))
        if tags is not None:
            keep &= tags_candidate_mask(self.topic, units, tags)
        return units[keep]

    def _damage(self, units: np.ndarray) -> Iterator[UnitDamage]:
        """Where each of these damaged units is, and why it is damage (damage.md §3)."""
        for q, phy, size in zip(units["queue_offset"].tolist(), units["phy"].tolist(), units["size"].tolist(),
                                strict=True):
            why = ("is invalid" if phy < 0 or size <= 0 else
                   f"points outside the commit log's [{self._log_min}, {self._log_max})")
            yield self.unit_damage(q, f"(phyOffset {phy}, size {size}) {why}, and valid units follow it")

    def unit_damage(self, queue_offset: int, why: str) -> UnitDamage:
        """The damage of the unit of `queue_offset` (damage.md §3): the file holding it, or the one that
        would (a file past the last, named as the broker names them, §4.3), and its byte in that file."""
        byte = queue_offset * CQ_UNIT_SIZE
        seg = next((s for s in self.segments if s.contains(byte)), None)
        if seg is None:
            last = self.segments[-1]
            base = byte - byte % last.size
            path = last.path[:-SEGMENT_NAME_DIGITS] + segment_file_name(base)
        else:
            path, base = seg.path, seg.base_offset
        at = byte - base
        return UnitDamage(path, at, queue_offset,
                          f"consume-queue unit of queue offset {queue_offset} at byte {at} of the file {why}")

    def floor(self, offset: int) -> int:
        """The first queue offset of the unit holding `offset`: `offset` itself (one message per unit)."""
        return offset

    def file_units(self, seg: Segment) -> np.ndarray:
        """`units` of one of the queue's files."""
        return self.units(seg.base_offset // CQ_UNIT_SIZE, seg.end_offset // CQ_UNIT_SIZE)

    def spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of queue offsets [start, end) whose units lie in the queue's files, in order.

        Files are named by the offset of their first byte (a multiple of 20, §4.3); whole units only.
        Planning splits these, never the offsets between files (a file named far ahead is no reason
        to plan a range of queue offsets with no unit).
        """
        out: list[tuple[int, int]] = []
        for seg in self.segments:
            a = max(start, seg.base_offset // CQ_UNIT_SIZE)
            b = min(end, seg.end_offset // CQ_UNIT_SIZE)
            if a < b and out and out[-1][1] == a:
                out[-1] = (out[-1][0], b)
            elif a < b:
                out.append((a, b))
        return out

    def last_phy(self) -> int | None:
        """PHYSICALOFFSET of the queue's last valid unit that is not a filler, units past the log's valid
        end included (None when the queue has none): a record the dispatcher saw (damage.md §2)."""
        for seg in reversed(self.segments):
            live = self._live_units(seg)
            live = live[valid_units_mask(live) & ~is_filler(live)]
            if len(live):
                return int(live["phy"][-1])
        return None

    def _live_units(self, seg: Segment) -> np.ndarray:
        """The units of a segment up to its last valid one that `UNIT_DAMAGE_LOOKAHEAD` invalid units
        follow (the file's end, damage.md §2; invalid units before it included), read like `_windows`
        (not the zeros the broker pre-allocated past the queue's end, past the lookahead; after a window
        holding that end, only the lookahead is read) and kept for later reads of the file."""
        stop = seg.size // CQ_UNIT_SIZE
        parts, first, last, ended = [], 0, -1, False
        window = FIRST_WINDOW_UNITS
        while not ended and first < stop:
            units = self._segment_units(seg, first, min(window, stop - first), point=True)
            if not len(units):
                break
            parts.append(units)
            last, ended = extend_queue_end(units, first, last)
            first += len(units)
            window = window * 2 if last == first - 1 else last + UNIT_DAMAGE_LOOKAHEAD + 1 - first
        live = np.concatenate(parts)[: last + 1] if parts else np.empty(0, dtype=CQ_DTYPE)
        self._kept[seg.path] = live
        return live

    def _windows(self, seg: Segment, stop: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first unit index, units) of a segment's units [0, stop), in order, by positioned reads
        growing from `FIRST_WINDOW_UNITS` units (x2 each), so a caller that stops early reads at most
        about 2x what it looked at (planning reads, design §4.5)."""
        first, window = 0, FIRST_WINDOW_UNITS
        while first < stop:
            units = self._segment_units(seg, first, min(window, stop - first), point=True)
            if not len(units):
                return
            yield first, units
            first, window = first + len(units), window * 2

    def _segment_units(self, seg: Segment, first_unit: int, count: int, *, point: bool = False) -> np.ndarray:
        """`count` units of a segment from unit index `first_unit` (as stored, big-endian); `point`: a
        planning read, by positioned reads of just these bytes (design §4.5), else a scan's."""
        kept = self._kept.get(seg.path)
        if kept is not None and first_unit + count <= len(kept):
            return kept[first_unit : first_unit + max(count, 0)]
        handle = self._files.get(seg.path)
        read = handle.read_at if point else handle.read
        data = read(first_unit * CQ_UNIT_SIZE, max(count, 0) * CQ_UNIT_SIZE)
        whole = len(data) - len(data) % CQ_UNIT_SIZE
        return parse_units(data[:whole]) if whole else np.empty(0, dtype=CQ_DTYPE)


class BatchConsumeQueue(_QueueFiles):
    """Units of one BatchConsumeQueue (§4.5), bounded by the commit log's [min_offset, max_offset).

    A unit covers the queue offsets [msgBaseOffset, msgBaseOffset + batchSize): an inner-batch record
    (§2.11) holds that many messages, any other record one. Its `queue_offset` (as in `UNIT_DTYPE`) is
    msgBaseOffset, the record's own QUEUEOFFSET and the offset getMessage returns it at. Files are
    named by byte offset in the unit space, not by queue offset, so the queue's valid units (recovery's:
    up to the first invalid one) are read once and searched by msgBaseOffset.
    """

    def __repr__(self) -> str:
        return f"BatchConsumeQueue({self.topic!r}, {self.queue_id}, [{self.min_offset}, {self.max_offset}))"

    @cached_property
    def _by_file(self) -> list[np.ndarray]:
        """Each file's valid units as `UNIT_DTYPE` plus `batch`, up to the first invalid unit of the queue
        (later files are not part of it), and only those pointing inside the log's [min, max)."""
        out = []
        for seg in self.segments:
            data = self._files.get(seg.path).read(0, seg.size)
            raw = parse_batch_units(data)
            count = valid_batch_unit_count(raw)
            raw = raw[:count]
            keep = (raw["phy"] >= self._log_min) & (raw["phy"] < self._log_max)
            units = np.empty(int(np.count_nonzero(keep)), dtype=_BATCH_UNIT_DTYPE)
            for field in ("phy", "size", "tags_code", "batch"):
                units[field] = raw[field][keep]
            units["queue_offset"] = raw["base"][keep]
            out.append(units)
            if count < seg.size // BCQ_UNIT_SIZE:  # recovery ends the queue in the first file not full
                break
        return out

    @cached_property
    def _units(self) -> np.ndarray:
        return np.concatenate(self._by_file) if self._by_file else np.empty(0, dtype=_BATCH_UNIT_DTYPE)

    @cached_property
    def max_offset(self) -> int:
        """One past the last message of the last unit that points before the log's valid end."""
        units = self._units
        return int(units["queue_offset"][-1] + units["batch"][-1]) if len(units) else 0

    @cached_property
    def min_offset(self) -> int:
        """msgBaseOffset of the first unit pointing at or after the log's min offset."""
        return int(self._units["queue_offset"][0]) if len(self._units) else 0

    def end_bound(self, upto: int | None = None) -> int:
        """`max_offset` (the queue's units are read whole)."""
        return self.max_offset

    def unit_span(self) -> tuple[int, int]:
        """Queue offsets [first, end) the queue holds (its units are read whole)."""
        return self.min_offset, self.max_offset

    def last_phy(self) -> int | None:
        """PHYSICALOFFSET of the last kept unit (units past the log's valid end are not kept here,
        damage.md §2)."""
        return int(self._units["phy"][-1]) if len(self._units) else None

    def stored_units(self) -> np.ndarray:
        """Every unit of the files up to the first invalid one, as stored (`parse_batch_units`), for
        `verify`."""
        data = self._files_bytes()
        batch = parse_batch_units(data[: len(data) // BCQ_UNIT_SIZE * BCQ_UNIT_SIZE])
        return batch[: valid_batch_unit_count(batch)]

    def floor(self, offset: int) -> int:
        """msgBaseOffset of the unit holding queue offset `offset` (getMessage from an offset inside a
        batch returns that whole batch, §4.5); `offset` itself when no unit holds it."""
        units = self._units
        at = int(np.searchsorted(units["queue_offset"], offset, side="right")) - 1
        if at >= 0 and offset < units["queue_offset"][at] + units["batch"][at]:
            return int(units["queue_offset"][at])
        return offset

    def units(self, start: int | None = None, end: int | None = None, *,
              tags: Iterable[str] | None = None) -> np.ndarray:
        """Units holding queue offsets in [start, end): the one holding `start` included."""
        lo = self.min_offset if start is None else self.floor(start)
        return self.slice_units(lo, self.max_offset if end is None else end, tags=tags)

    def slice_units(self, start: int, end: int, *, tags: Iterable[str] | None = None) -> np.ndarray:
        """Units whose msgBaseOffset is in [start, end), as `UNIT_DTYPE`: slices that partition a range
        of queue offsets partition its units (each in the slice holding its first message)."""
        units = self._units
        lo, hi = np.searchsorted(units["queue_offset"], [start, end])
        picked = units[lo:hi]
        if tags is not None:
            picked = picked[tags_candidate_mask(self.topic, picked, tags)]
        return picked[list(UNIT_DTYPE.names)].astype(UNIT_DTYPE)

    def file_units(self, seg: Segment) -> np.ndarray:
        """`units` of one of the queue's files."""
        at = self.segments.index(seg)
        units = self._by_file[at] if at < len(self._by_file) else self._units[:0]
        return units[list(UNIT_DTYPE.names)].astype(UNIT_DTYPE)

    def spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """[start, end) ∩ the queue's offsets, as one part (units are not placed by queue offset)."""
        a, b = max(start, self.min_offset), min(end, self.max_offset)
        return [(a, b)] if a < b else []


_BATCH_UNIT_DTYPE = np.dtype([*UNIT_DTYPE.descr, ("batch", "<i8")])


class ConsumeQueueExt:
    """One queue's ConsumeQueueExt files `consumequeue_ext/<topic>/<queueId>/` (§4.4), read-only: the
    unit an ext address (a tagsCode <= Integer.MIN_VALUE - 1) names."""

    def __init__(self, segments: list[Segment], files: OpenFiles) -> None:
        self.segments = segments
        self._files = files

    def unit(self, address: int) -> tuple[int, int] | None:
        """(tagsCode, storeTime) of the unit at `address`, None when no file holds a whole unit there."""
        offset = ext_address_offset(address)
        for seg in self.segments:
            if seg.base_offset <= offset < seg.end_offset:
                data = self._files.get(seg.path).read(0, seg.size)
                return parse_ext_unit(bytes(data), offset - seg.base_offset)
        return None
