package io.rmqstore.spark.store

import java.nio.ByteBuffer

import scala.collection.mutable

import io.rmqstore.spark.format.{BatchConsumeQueueUnit, ConsumeQueueUnit, ContractLayout}
import io.rmqstore.spark.format.ConsumeQueueUnit.{Size => Unit20}
import io.rmqstore.spark.io.{RandomAccess, StoreFileSystem}

/** One unit as returned by `ConsumeQueue.units`: the queue offset plus the three unit fields (§4.1). */
final case class QueueUnit(queueOffset: Long, phyOffset: Long, size: Int, tagsCode: Long)

/** A unit inside a queue's range that points at no record it could hold: invalid, or outside the log's [min, max)
  * although valid units follow it (docs/damage.md §3): its file, byte offset in it, queue offset and why
  * (python/rmqstore/store/consumequeue.py `UnitDamage`).
  */
final case class UnitDamage(file: String, position: Long, queueOffset: Long, cause: String)

/** What the readers ask of a consume queue, whether files (`ConsumeQueue`, §4.3; `BatchConsumeQueue`, §4.5) or
  * RocksDB (`RocksConsumeQueue`, §4.7): its [minOffset, maxOffset) inside the commit log's [min, max).
  */
private[store] trait QueueReader {
  def minOffset: Long
  def maxOffset: Long

  /** Units holding queue offsets in [start, end) ∩ [minOffset, maxOffset), in queue order, inside the log. */
  def units(start: Long, end: Long): Iterator[QueueUnit]

  /** Units whose first queue offset is in [start, end): slices partitioning a range partition its units. */
  def sliceUnits(start: Long, end: Long): Iterator[QueueUnit] = units(start, end)

  /** `sliceUnits`, handing the slice's damaged units to `damage` (docs/damage.md §3): only a `ConsumeQueue`'s
    * units can be (a BatchConsumeQueue ends at its first invalid unit, a RocksDB queue has none).
    */
  def sliceUnits(start: Long, end: Long, damage: UnitDamage => Unit): Iterator[QueueUnit] = sliceUnits(start, end)

  /** The first queue offset of the unit holding `offset` (a BatchCQ batch's msgBaseOffset, §4.5). */
  def floor(offset: Long): Long = offset

  /** The parts of queue offsets [start, end) the queue stores units for, as runs in order (planning splits
    * these).
    */
  def spans(start: Long, end: Long): Seq[(Long, Long)]

  /** The units pointing at or after `firstPhy` (maybe some before): the queue's tail, for `Coverage`. */
  def unitsFrom(firstPhy: Long): Seq[QueueUnit]

  /** PHYSICALOFFSET of the last stored unit that is not a filler, units past the log's valid end included
    * (a record the dispatcher saw, docs/damage.md §2).
    */
  def lastPhyOffset: Option[Long]
}

/** A queue kept in files named by the offset of their first byte: a ConsumeQueue or a BatchConsumeQueue (§4.5),
  * like python/rmqstore/store/consumequeue.py's two classes.
  */
private[store] abstract class QueueFiles(
    protected val fs: StoreFileSystem,
    val segments: IndexedSeq[Segment],
    protected val logMin: Long,
    protected val logMax: Long
) extends QueueReader {

  /** The units of one of the queue's files. */
  def fileUnits(seg: Segment): Iterator[QueueUnit]

  /** The last files, read backwards to the first one holding a unit below `firstPhy` (units follow log order
    * along a queue; one out of order only leaves a segment uncovered: scanned, never missed).
    */
  def unitsFrom(firstPhy: Long): Seq[QueueUnit] = {
    val parts = mutable.ArrayBuffer.empty[IndexedSeq[QueueUnit]]
    val it = segments.reverseIterator
    var done = false
    while (!done && it.hasNext) {
      val found = fileUnits(it.next()).toIndexedSeq
      parts += found
      done = found.nonEmpty && found.head.phyOffset < firstPhy
    }
    parts.reverseIterator.flatten.toSeq
  }
}

/** One consume queue `consumequeue/<topic>/<queueId>/` read-only (§4.1-§4.3), like
  * python/rmqstore/store/consumequeue.py.
  *
  * Queue offset q lives at byte q*20 of the queue's own address space, in the segment named by the
  * offset of its first byte. A unit is valid when phyOffset >= 0 and size > 0 (recovery's test); the queue runs
  * to its last valid unit that `ContractLayout.UnitDamageLookahead` invalid units follow, so an invalid unit before it is damage,
  * not the queue's end (docs/damage.md §2, §3); pre-blank fillers are skipped; units pointing before the commit
  * log's min offset are gone (retention), units at or past the log's valid end are truncated by recovery, so
  * neither is returned. The last file may still be written by the broker, so it is read by positioned reads. Finding
  * a queue's first and last unit reads a file by positioned reads in growing windows (`windows`), not the zeros the
  * broker pre-allocated past the queue's end (design §4.5).
  */
private[store] object ConsumeQueue {

  /** Units (20 KiB) of the first read of a queue file searched for its first or last unit; each further read is
    * twice as long (python/rmqstore/store/consumequeue.py `FIRST_WINDOW_UNITS`, measured there).
    */
  final val FirstWindowUnits = 1024L
}

private[store] final class ConsumeQueue(fs: StoreFileSystem, segments: IndexedSeq[Segment], logMin: Long, logMax: Long)
    extends QueueFiles(fs, segments, logMin, logMax) {
  import ConsumeQueue._

  /** A file's units read while searching for its end (`liveUnits`), by path: later reads inside them are served
    * from here, not read again.
    */
  private val kept = mutable.HashMap.empty[String, ByteBuffer]

  /** `count` units of `seg` from unit index `firstUnit` (whole units only), from `kept` when they are there. */
  private def segmentUnits(seg: Segment, file: => RandomAccess, firstUnit: Long, count: Long): ByteBuffer =
    kept.get(seg.path).filter(k => (firstUnit + count) * Unit20 <= k.limit()) match {
      case Some(k) => k.slice((firstUnit * Unit20).toInt, (math.max(count, 0L) * Unit20).toInt)
      case None =>
        val buf = file.read(firstUnit * Unit20, (math.max(count, 0L) * Unit20).toInt)
        buf.limit(buf.limit() - buf.limit() % Unit20)
        buf
    }

  private def open(seg: Segment): RandomAccess = fs.open(seg.path, finished = seg ne segments.last)

  /** `seg` for planning reads: positioned reads of just the bytes asked for (design §4.5). */
  private def probe(seg: Segment): RandomAccess = fs.open(seg.path, finished = seg ne segments.last, random = true)

  private def data(seg: Segment, firstUnit: Long, count: Long): ByteBuffer = {
    var file: RandomAccess = null
    try segmentUnits(seg, { file = open(seg); file }, firstUnit, count)
    finally if (file != null) file.close()
  }

  private def firstOffset: Long = if (segments.isEmpty) 0L else segments.head.baseOffset / Unit20

  /** `f(first unit index, units)` over a segment's units [0, stop) in order while it returns true, by positioned
    * reads growing from `FirstWindowUnits` units (x2 each), so a caller that stops early reads at most about 2x
    * what it looked at (python/rmqstore/store/consumequeue.py `_windows`).
    */
  private def windows(seg: Segment, stop: Long)(f: (Long, ByteBuffer) => Boolean): Unit = {
    val file = probe(seg)
    try {
      var (first, window, going) = (0L, FirstWindowUnits, true)
      while (going && first < stop) {
        val units = segmentUnits(seg, file, first, math.min(window, stop - first))
        going = units.limit() > 0 && f(first, units)
        first += units.limit() / Unit20
        window *= 2
      }
    } finally file.close()
  }

  /** The units of `seg` up to its last valid one that `ContractLayout.UnitDamageLookahead` invalid units follow (the
    * file's end, docs/damage.md §2; invalid units before it included), read like `windows` (not the zeros the broker
    * pre-allocated past the queue's end, past the lookahead; after a window holding that end, only the lookahead is
    * read) and kept for later reads (python/rmqstore/store/consumequeue.py `_live_units`).
    */
  private def liveUnits(seg: Segment): ByteBuffer = {
    val parts = mutable.ArrayBuffer.empty[ByteBuffer]
    val file = probe(seg)
    val stop = seg.size / Unit20
    var last = -1L
    try {
      var (first, ended, window) = (0L, false, FirstWindowUnits)
      while (!ended && first < stop) {
        val units = segmentUnits(seg, file, first, math.min(window, stop - first))
        if (units.limit() == 0) ended = true
        else {
          parts += units
          val (valid, found) = ConsumeQueueUnit.extendQueueEnd(units, first, last)
          first += units.limit() / Unit20
          window = if (valid == first - 1) window * 2 else valid + ContractLayout.UnitDamageLookahead + 1 - first
          last = valid
          ended = found
        }
      }
    } finally file.close()
    val live = if (parts.size == 1) parts.head
    else {
      val all = ByteBuffer.allocate(parts.map(_.limit()).sum)
      parts.foreach(p => all.put(p.duplicate()))
      all.flip()
    }
    live.limit(((last + 1) * Unit20).toInt)
    kept(seg.path) = live
    live
  }

  /** One past the last unit that is valid and points before the log's valid end. */
  lazy val maxOffset: Long = {
    val found = segments.reverseIterator.map { seg =>
      val units = liveUnits(seg)
      // phy offsets grow along a queue: the last valid unit reaching before logMax (a filler counts, §4.3)
      val last = (units.limit() / Unit20 - 1 to 0 by -1).find { i =>
        ConsumeQueueUnit.isValid(units, i * Unit20) && ConsumeQueueUnit.phyOffset(units, i * Unit20) < logMax ||
        ConsumeQueueUnit.isFiller(units, i * Unit20)
      }
      last.fold(-1L)(seg.baseOffset / Unit20 + _ + 1)
    }.find(_ >= 0)
    found.getOrElse(firstOffset)
  }

  /** PHYSICALOFFSET of the last valid unit that is not a filler, units past the log's valid end included (a
    * record the dispatcher saw, docs/damage.md §2; python/rmqstore/store/consumequeue.py `last_phy`).
    */
  def lastPhyOffset: Option[Long] = segments.reverseIterator.flatMap { seg =>
    val units = liveUnits(seg)
    (units.limit() / Unit20 - 1 to 0 by -1)
      .find(i => ConsumeQueueUnit.isValid(units, i * Unit20) && !ConsumeQueueUnit.isFiller(units, i * Unit20))
      .map(i => ConsumeQueueUnit.phyOffset(units, i * Unit20))
  }.find(_ => true)

  /** The first unit that is not a filler and points at or after the log's min offset (§4.3). */
  lazy val minOffset: Long = {
    val end = maxOffset
    val found = segments.iterator.takeWhile(_.baseOffset / Unit20 < end).map { seg =>
      val first = seg.baseOffset / Unit20
      var at = -1L
      windows(seg, math.min(seg.size / Unit20, end - first)) { (from, units) =>
        val n = units.limit() / Unit20
        var i = 0
        while (i < n && !usable(units, i * Unit20)) i += 1
        if (i < n) at = first + from + i
        i == n
      }
      at
    }.find(_ >= 0)
    found.getOrElse(end)
  }

  private def usable(units: ByteBuffer, at: Int): Boolean =
    !ConsumeQueueUnit.isFiller(units, at) && ConsumeQueueUnit.size(units, at) > 0 &&
      ConsumeQueueUnit.phyOffset(units, at) >= logMin

  def fileUnits(seg: Segment): Iterator[QueueUnit] = units(seg.baseOffset / Unit20, seg.endOffset / Unit20)

  /** `units` from the first one pointing at or after `firstPhy` (maybe some before), found by a bisection over
    * [minOffset, maxOffset) reading one unit per step (design §4.5): units follow log order along a queue, so a
    * valid unit below `firstPhy` has only such units before it. An invalid unit counts as past it (more units
    * read, none missed) (python/rmqstore/store/consumequeue.py `units_from_phy`).
    */
  override def unitsFrom(firstPhy: Long): Seq[QueueUnit] = {
    var (lo, hi) = (minOffset, maxOffset)
    if (firstPhy > logMin) while (lo < hi) {
      val mid = (lo + hi) / 2
      val below = segments.find(_.contains(mid * Unit20)).exists { seg =>
        val file = probe(seg)
        val unit =
          try segmentUnits(seg, file, mid - seg.baseOffset / Unit20, 1)
          finally file.close()
        unit.limit() == Unit20 && ConsumeQueueUnit.isValid(unit, 0) && ConsumeQueueUnit.phyOffset(unit, 0) < firstPhy
      }
      if (below) lo = mid + 1 else hi = mid
    }
    units(lo, maxOffset).toSeq
  }

  /** Units with queue offset in [start, end) ∩ [minOffset, maxOffset), in queue order; fillers, invalid
    * units and units pointing outside the log's [min, max) are left out.
    */
  def units(start: Long, end: Long): Iterator[QueueUnit] =
    sliceUnits(math.max(start, minOffset), math.min(end, maxOffset), _ => ())

  /** Units of a slice already inside [minOffset, maxOffset) (a plan's, made on the same log snapshot); the damaged
    * units inside the queue's bounds (invalid, or pointing outside the log, with valid units after them:
    * docs/damage.md §3) go to `damage` (python/rmqstore/store/consumequeue.py `slice_units`).
    */
  override def sliceUnits(lo: Long, hi: Long, damage: UnitDamage => Unit): Iterator[QueueUnit] =
    segments.iterator
      .filter(seg => seg.endOffset / Unit20 > lo && seg.baseOffset / Unit20 < hi)
      .flatMap { seg =>
        val segFirst = seg.baseOffset / Unit20
        val from = math.max(lo, (seg.baseOffset + Unit20 - 1) / Unit20)
        val take = math.min(hi, seg.endOffset / Unit20) - from
        val units = data(seg, from - segFirst, take)
        Iterator.range(0, units.limit() / Unit20).flatMap { i =>
          val at = i * Unit20
          val (phy, size) = (ConsumeQueueUnit.phyOffset(units, at), ConsumeQueueUnit.size(units, at))
          val inside = ConsumeQueueUnit.isValid(units, at) && phy >= logMin && phy < logMax
          val q = from + i
          if (!inside && !ConsumeQueueUnit.isFiller(units, at) && q >= minOffset && q < maxOffset) {
            val why = if (phy < 0 || size <= 0) "is invalid" else s"points outside the commit log's [$logMin, $logMax)"
            damage(unitDamage(q, s"(phyOffset $phy, size $size) $why, and valid units follow it"))
          }
          if (inside && !ConsumeQueueUnit.isFiller(units, at))
            Some(QueueUnit(q, phy, size, ConsumeQueueUnit.tagsCode(units, at)))
          else None
        }
      }

  /** The damage of the unit of `queueOffset` (docs/damage.md §3): the file holding it, or the one that would (a
    * file past the last, named as the broker names them, §4.3), and its byte in that file
    * (python/rmqstore/store/consumequeue.py `unit_damage`).
    */
  def unitDamage(queueOffset: Long, why: String): UnitDamage = {
    val byte = queueOffset * Unit20
    val (path, base) = segments.find(_.contains(byte)) match {
      case Some(seg) => (seg.path, seg.baseOffset)
      case None =>
        val last = segments.last
        val base = byte - byte % last.size
        (last.path.dropRight(Segments.NameDigits) + Segments.fileName(base), base)
    }
    val at = byte - base
    UnitDamage(path, at, queueOffset, s"consume-queue unit of queue offset $queueOffset at byte $at of the file $why")
  }

  /** Files are named by the offset of their first byte: planning splits these runs, never the offsets between
    * files (python/rmqstore/store/consumequeue.py `spans`).
    */
  def spans(start: Long, end: Long): Seq[(Long, Long)] = {
    val out = mutable.ArrayBuffer.empty[(Long, Long)]
    for (seg <- segments) {
      val a = math.max(start, seg.baseOffset / Unit20)
      val b = math.min(end, seg.endOffset / Unit20)
      if (a < b && out.nonEmpty && out.last._2 == a) out(out.length - 1) = (out.last._1, b)
      else if (a < b) out += ((a, b))
    }
    out.toSeq
  }
}

/** One BatchConsumeQueue `batchconsumequeue/<topic>/<queueId>/` read-only (§4.5), like
  * python/rmqstore/store/consumequeue.py `BatchConsumeQueue`: a unit covers the queue offsets
  * [msgBaseOffset, msgBaseOffset + batchSize) and its `queueOffset` is msgBaseOffset (the record's own
  * QUEUEOFFSET). Files are named by byte offset in the unit space, so the valid units (recovery's: up to the
  * first invalid one) are read once and searched by msgBaseOffset.
  */
private[store] final class BatchConsumeQueue(
    fs: StoreFileSystem,
    segments: IndexedSeq[Segment],
    logMin: Long,
    logMax: Long
) extends QueueFiles(fs, segments, logMin, logMax) {
  import BatchConsumeQueueUnit.{Size => Unit46}

  /** Each file's kept units (pointing inside the log's [min, max)) with their batch sizes. */
  private lazy val byFile: IndexedSeq[IndexedSeq[(QueueUnit, Int)]] = {
    val out = mutable.ArrayBuffer.empty[IndexedSeq[(QueueUnit, Int)]]
    val it = segments.iterator
    var going = true
    while (going && it.hasNext) {
      val seg = it.next()
      val file = fs.open(seg.path, finished = seg ne segments.last)
      val buf =
        try file.read(0L, seg.size.toInt)
        finally file.close()
      val n = buf.limit() / Unit46
      var valid = 0
      while (valid < n && BatchConsumeQueueUnit.isValid(buf, valid * Unit46)) valid += 1
      out += (0 until valid).map(i => i * Unit46).collect {
        case at
            if BatchConsumeQueueUnit.phyOffset(
              buf,
              at
            ) >= logMin && BatchConsumeQueueUnit.phyOffset(buf, at) < logMax =>
          (
            QueueUnit(
              BatchConsumeQueueUnit.baseOffset(buf, at),
              BatchConsumeQueueUnit.phyOffset(buf, at),
              BatchConsumeQueueUnit.size(buf, at),
              BatchConsumeQueueUnit.tagsCode(buf, at)
            ),
            BatchConsumeQueueUnit.batchSize(buf, at)
          )
      }
      going = valid == seg.size / Unit46 // recovery ends the queue in the first file that is not full
    }
    out.toIndexedSeq
  }

  private lazy val all: IndexedSeq[(QueueUnit, Int)] = byFile.flatten
  private lazy val bases: Array[Long] = all.map(_._1.queueOffset).toArray

  lazy val maxOffset: Long = all.lastOption.fold(0L) { case (u, n) => u.queueOffset + n }
  lazy val minOffset: Long = all.headOption.fold(0L)(_._1.queueOffset)

  /** msgBaseOffset of the unit holding `offset` (getMessage from inside a batch returns the whole batch). */
  override def floor(offset: Long): Long = {
    val at = upper(offset) - 1
    if (at >= 0 && offset < all(at)._1.queueOffset + all(at)._2) all(at)._1.queueOffset else offset
  }

  /** Index of the first unit whose msgBaseOffset is > `offset`. */
  private def upper(offset: Long): Int = {
    val i = java.util.Arrays.binarySearch(bases, offset)
    if (i >= 0) { var j = i; while (j < bases.length && bases(j) == offset) j += 1; j }
    else -i - 1
  }

  def units(start: Long, end: Long): Iterator[QueueUnit] = sliceUnits(floor(start), end)

  override def sliceUnits(start: Long, end: Long): Iterator[QueueUnit] =
    all.iterator.map(_._1).dropWhile(_.queueOffset < start).takeWhile(_.queueOffset < end)

  def fileUnits(seg: Segment): Iterator[QueueUnit] = {
    val at = segments.indexOf(seg)
    if (at >= 0 && at < byFile.length) byFile(at).iterator.map(_._1) else Iterator.empty
  }

  def spans(start: Long, end: Long): Seq[(Long, Long)] = {
    val (a, b) = (math.max(start, minOffset), math.min(end, maxOffset))
    if (a < b) Seq((a, b)) else Seq.empty
  }

  /** The last kept unit's PHYSICALOFFSET (units past the log's valid end are not kept here, docs/damage.md §2). */
  def lastPhyOffset: Option[Long] = all.lastOption.map(_._1.phyOffset)
}
