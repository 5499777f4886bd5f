package io.rmqstore.spark.store

import java.io.IOException
import java.nio.ByteBuffer

import scala.collection.mutable

import io.rmqstore.spark.format.{DLedgerEntry, Layout, RecordCheck, RecordView, Resync}
import io.rmqstore.spark.io.RandomAccess

/** Admission limits of one trigger: at most `records` messages and `bytes` record bytes
  * (python/rmqstore/store/tail.py `Limits`). A batch always admits at least one record, so a record
  * bigger than `bytes` cannot stall a query.
  */
final case class Limits(records: Option[Long] = None, bytes: Option[Long] = None) {
  def admits(admitted: Long, admittedBytes: Long, nextSize: Long): Boolean =
    admitted == 0 || (records.forall(admitted + 1 <= _) && bytes.forall(admittedBytes + nextSize <= _))
}

object Limits {
  val NoLimits: Limits = Limits()
}

/** Result of a walk: the end position and the records / record bytes between start and end; `held`: the
  * position of a record still being written that the walk stopped at (docs/damage.md §2).
  */
final class Advance(var end: Long) {
  var records = 0L
  var bytes = 0L
  var held: Option[Long] = None
}

/** What a driver remembers between triggers about one store's commit log: every record before
  * `sealedUntil` was checked and sealed (it only moves forward), except at `damaged`: where a PERMISSIVE walk
  * stepped over damage (docs/damage.md §1), checked again by every walk (a hop by the TOTALSIZE there would
  * land inside the damage); `segmentCounts` holds the records of sealed segments walked from start to BLANK
  * (for the lag figure).
  */
final class LogWalkCache {
  var sealedUntil = 0L
  val damaged: mutable.Set[Long] = mutable.Set.empty
  val segmentCounts: mutable.HashMap[Long, Long] = mutable.HashMap.empty
}

/** The commit log of one store as a stream sees it: record boundaries and the sealed end; the JVM twin
  * of python/rmqstore/store/tail.py `CommitLogTail`, whose module docstring states the torn-record
  * rule (design §4.3). A record at p counts as complete only when (1) it validates as recovery would
  * (§2.12: magic, TOTALSIZE, BODYCRC, PHYSICALOFFSET == p, room for a BLANK after it, §2.6), and (2) it is
  * sealed: (a) a later segment has started, or (b) the 8 bytes after it start the next write (a BLANK,
  * or TOTALSIZE > 0 with a record magic), or (c) its consume-queue unit exists and points at it (§4.1),
  * or (d) no broker is writing (no `abort` file, §6.2). A record that validates but is not sealed waits.
  * A record that fails (1) is still being written only when nothing valid follows it (damage.md §2): the
  * walk holds at it (`Advance.held`); otherwise it is damage (damage.md §1): FAILFAST throws, PERMISSIVE
  * steps over it and the read skips and counts it.
  *
  * `store` is opened per trigger (a fresh listing); sealed segments are memory-mapped and only hopped
  * over (TOTALSIZE by TOTALSIZE), the others are read by positioned reads in windows, and their records
  * beyond `cache.sealedUntil` get the full check and the seal test.
  *
  * Entry framing (`lead`, §2.13): in a DLedger log the writes are entries, a record validates with its entry
  * header, and the walk's boundaries are record positions (the commitLogOffset of the record an entry starting
  * there holds, `lead` bytes after it), as python/rmqstore/store/tail.py's module docstring states.
  */
final class Tail private[store] (
    log: CommitLog,
    index: IndexFiles,
    queues: Queues,
    config: StoreConfig,
    cache: LogWalkCache,
    permissive: Boolean
) extends AutoCloseable {
  import Tail._
  import Layout._

  /** Bytes of entry framing before each record: 0, or 48 in a DLedger log (§2.13). */
  private val lead: Int = log.lead

  val segments: IndexedSeq[Segment] = log.segments
  private val windows = mutable.HashMap.empty[Int, Window]

  /** Places a PERMISSIVE walk stepped over in sealed segments (the read steps over them too). */
  val skipped: mutable.ArrayBuffer[String] = mutable.ArrayBuffer.empty

  private val started: IndexedSeq[Boolean] = segments.map { seg =>
    val file = log.openSegment(seg, mapped = false)
    try writeStarted(file.read(0, HeaderBytes), 0, seg.size, lead)
    finally file.close()
  }
  private val lastStarted: Int = started.lastIndexWhere(identity)

  def minOffset: Long = if (segments.isEmpty) 0L else first(segments.head)

  /** The boundary at the segment's start: its first record's position. */
  private def first(seg: Segment): Long = seg.baseOffset + lead

  /** The boundary at the segment's end: the next segment's first record's position. */
  private def last(seg: Segment): Long = seg.endOffset + lead

  /** A later segment has started: the broker wrote this one's BLANK before it (rule a). */
  private def isSealedSegment(i: Int): Boolean = i < lastStarted

  private def window(i: Int): Window =
    windows.getOrElseUpdate(i, new Window(log.openSegment(segments(i), mapped = isSealedSegment(i))))

  private def segmentIndex(position: Long): Option[Int] =
    segments.indices.find(i => first(segments(i)) <= position && position < last(segments(i)))

  /** The position itself, or the next segment's start when `position` holds a BLANK. */
  def canonical(position: Long): Long = segmentIndex(position) match {
    case None => position
    case Some(i) =>
      val seg = segments(i)
      val w = window(i)
      val rel = position - seg.baseOffset - lead
      val at = w.at(rel, HeaderBytes)
      if (w.available(at) >= HeaderBytes && frame(w.buffer, at, seg.size - rel, lead)._1 == FrameBlank) last(seg)
      else position
  }

  /** True for a segment start, the log end, or the position of a valid record (BODYCRC unchecked). */
  def isRecordStart(position: Long): Boolean = segmentIndex(position) match {
    case None => true
    case Some(i) if position == first(segments(i)) => true
    case Some(i) =>
      val w = window(i)
      val at = w.record(position - segments(i).baseOffset, lead)
      if (lead == 0) RecordCheck.check(w.buffer, at, w.buffer.limit(), verifyCrc = false, position) >= 0
      else { // a DLedger blank's position counts, as a BLANK's does (`canonical` moves on)
        val left = segments(i).size - (position - segments(i).baseOffset) + lead
        val blank =
          at >= lead && w.available(at - lead) >= HeaderBytes && frame(w.buffer, at - lead, left, lead)._1 == FrameBlank
        blank || problem(w.buffer, at, position, verifyCrc = false) == null
      }
  }

  /** From record boundary `start`, admit sealed records within `limits`, never past `stop`. */
  def walk(start: Long, limits: Limits = Limits.NoLimits, stop: Option[Long] = None): Advance = {
    val advance = new Advance(start)
    var index = segmentIndex(start)
    while (index.isDefined) {
      val i = index.get
      val seg = segments(i)
      val segSealed = isSealedSegment(i)
      val fast = segSealed && limits == Limits.NoLimits && advance.end == first(seg) && stop.forall(_ >= last(seg))
      val done =
        if (fast) { advance.end = last(seg); false }
        else walkSegment(i, segSealed, advance, limits, stop)
      if (done || i + 1 >= segments.length || !started(i + 1) || advance.end != last(seg)) return advance
      index = Some(i + 1)
    }
    advance
  }

  /** Walk one segment from `advance.end`; true when the walk must stop inside it. */
  private def walkSegment(i: Int, segSealed: Boolean, advance: Advance, limits: Limits, stop: Option[Long]): Boolean = {
    val seg = segments(i)
    val w = window(i)
    val (base, size) = (seg.baseOffset, seg.size)
    var rel = advance.end - base // the record's position in the segment; its entry starts `lead` bytes before
    val fromStart = rel == lead
    var counted = 0L
    while (true) {
      if (stop.exists(base + rel >= _)) {
        advance.end = base + rel
        return true
      }
      if (rel - lead + HeaderBytes > size)
        return invalid(i, rel, segSealed, advance, s"${size - rel + lead} bytes left, no room for a header")
      val head = w.at(rel - lead, HeaderBytes)
      val (total, cause) = frame(w.buffer, head, size - rel + lead, lead)
      if (total == FrameBlank) {
        advance.end = last(seg)
        if (fromStart && segSealed) cache.segmentCounts(base) = counted
        return false
      }
      val position = base + rel
      // a failing record of the active segment: (its TOTALSIZE when its header announces a record, the cause)
      val failed: Option[(Option[Int], String)] =
        if (total <= 0) {
          if (segSealed) return invalid(i, rel, segSealed, advance, cause)
          if (total == FrameEmpty) { // nothing written here yet
            advance.end = position
            return true
          }
          Some((None, cause))
        } else if (!segSealed && (position >= cache.sealedUntil || cache.damaged(position))) {
          val at = w.at(rel - lead, lead + total + HeaderBytes) + lead
          val reason = problem(w.buffer, at, position, verifyCrc = true)
          if (reason != null) Some((Some(total), reason))
          else if (!recordSealed(w, rel, position, total, size)) {
            advance.end = position
            advance.held = Some(position)
            return true
          } else {
            cache.sealedUntil = position + total + lead
            None
          }
        } else None
      failed match {
        case Some((size0, cause)) =>
          failing(i, w, rel, size0, advance, cause) match {
            case None => return true
            case Some(next) => rel = next
          }
        case None =>
          if (!limits.admits(advance.records, advance.bytes, total)) {
            advance.end = position
            return true
          }
          advance.records += 1
          advance.bytes += total
          counted += 1
          rel += total + lead
          advance.end = base + rel
      }
    }
    false
  }

  /** Why the record at `at` of `buf` (physical `position`) does not validate as recovery would, its entry header
    * included in a DLedger log; null when it does.
    */
  private def problem(buf: ByteBuffer, at: Int, position: Long, verifyCrc: Boolean): String = {
    val code = RecordCheck.check(buf, at, buf.limit(), verifyCrc, position)
    if (code <= 0) RecordCheck.describe(buf, at, buf.limit(), verifyCrc, position)
    else if (lead > 0) DLedgerEntry.problem(buf, at - lead, position - at, code)
    else null
  }

  /** The valid record at `rel` (physical `position`) is sealed. */
  private def recordSealed(w: Window, rel: Long, position: Long, total: Int, size: Long): Boolean = {
    val at = w.at(rel - lead, lead + total + HeaderBytes) + lead
    val buf = w.buffer
    if (rel + total + HeaderBytes <= size && writeStarted(buf, at + total, size - rel - total, lead)) return true
    unitConfirms(buf, at, position, total) || !config.abortPresent
  }

  /** A record of the active segment that fails its checks (docs/damage.md §2): None when it is still being
    * written (the walk holds at it); else damage: FAILFAST throws, PERMISSIVE returns where the walk goes on
    * (the read skips and counts the bytes before it, docs/damage.md §1).
    */
  private def failing(i: Int, w: Window, rel: Long, total: Option[Int], advance: Advance, cause: String)
      : Option[Long] = {
    val seg = segments(i)
    val position = seg.baseOffset + rel
    // whole when read again (before or after looking for what follows): the broker was writing it
    val after = if (wholeNow(seg, rel)) None else validAfter(i, w, rel, total).filterNot(_ => wholeNow(seg, rel))
    after match {
      case None =>
        advance.end = position
        advance.held = Some(position)
        None
      case Some((after, named)) =>
        val evidence = named.fold(s"a valid record follows at physical offset $after")(k =>
          s"the store's consume queues or index name a record at physical offset $k"
        )
        if (!permissive)
          throw new StoreCorruptionException(
            seg.path,
            position,
            s"corrupt commit log: $cause. This is not a record still being written: $evidence (docs/damage.md §2). " +
              "Use mode=PERMISSIVE to step over the damaged bytes."
          )
        skipped += s"${seg.path} at physical offset $position: $cause; $evidence; the read steps over the damaged bytes"
        cache.damaged += position
        advance.end = after
        Some(after - seg.baseOffset)
    }
  }

  /** The record at `rel` validates when read again now: the broker finished it after the walk first read it,
    * and what follows it was written since (a live broker, not damage).
    */
  private def wholeNow(seg: Segment, rel: Long): Boolean = {
    val file = log.openSegment(seg, mapped = false)
    try {
      val head = file.read(rel, HeaderBytes)
      val total = if (head.limit() >= HeaderBytes) head.getInt(0) else 0
      total >= MinRecordSize && rel + total <= seg.size && rel >= lead && {
        val buf = file.read(rel - lead, lead + total)
        problem(buf, lead, seg.baseOffset + rel, verifyCrc = true) == null
      }
    } finally file.close()
  }

  /** (where the walk goes on, the position the store names if that is the evidence) when something valid
    * follows the failing record at `rel`: a complete record (or the segment's end filler) where its size leads,
    * else the first record start before the furthest one the consume queues or index name (docs/damage.md §2);
    * None otherwise.
    */
  private def validAfter(i: Int, w: Window, rel: Long, total: Option[Int]): Option[(Long, Option[Long])] = {
    val seg = segments(i)
    val (base, size) = (seg.baseOffset, seg.size)
    val leads = total.filter(t => rel + t + HeaderBytes <= size).flatMap { t =>
      val next = rel + t + lead
      val head = w.at(next - lead, HeaderBytes)
      val (following, _) = frame(w.buffer, head, size - next + lead, lead)
      val whole = following == FrameBlank || following > 0 && {
        val at = w.at(next - lead, lead + following) + lead
        problem(w.buffer, at, base + next, verifyCrc = true) == null
      }
      if (whole) Some((base + next, None)) else None
    }
    leads.orElse {
      LostUnits.dispatchFrontier(index, queues).filter(_ > base + rel).map { known =>
        val stop = math.min(known, seg.endOffset) - base
        val at = w.at(rel, (stop - rel + HeaderBytes).toInt)
        val found =
          Resync.nextRecordStart(w.buffer, at + 1, at + (stop - rel).toInt + 1, base + rel - at, seg.endOffset)
        (if (found >= 0) base + rel - at + found else base + stop, Some(known))
      }
    }
  }

  /** Rule (c): the record's consume-queue unit exists and points at exactly this record. */
  private def unitConfirms(buf: ByteBuffer, at: Int, position: Long, total: Int): Boolean =
    try {
      val record = new RecordView().reset(buf, at, position)
      if (!Layout.isQueued(record.sysFlag)) false // never gets a unit (§4.1)
      else {
        val (low, high) = queues.queueRange(record.topic, record.queueId)
        val qo = record.queueOffset
        qo >= low && qo < high && (queues.queueUnits(record.topic, record.queueId, qo, qo + 1).toSeq match {
          case Seq((_, phy, unitSize, _)) => phy == position && unitSize == total
          case _ => false
        })
      }
    } catch { case _: IOException | _: StoreException | _: IllegalArgumentException => false }

  /** Bad bytes inside a sealed segment: an error (FAILFAST), or (PERMISSIVE) this walk moves on to the
    * next segment while the read of that range steps over the damaged bytes (`RecordReader.scan`).
    */
  private def invalid(i: Int, rel: Long, segSealed: Boolean, advance: Advance, cause: String): Boolean = {
    val seg = segments(i)
    if (!segSealed) {
      advance.end = seg.baseOffset + rel
      return true
    }
    if (!permissive)
      throw new StoreCorruptionException(
        seg.path,
        seg.baseOffset + rel,
        s"corrupt commit log: $cause. A later segment exists, so this is not a torn tail. Use mode=PERMISSIVE " +
          "to step over the damaged bytes."
      )
    skipped += s"${seg.path} at physical offset ${seg.baseOffset + rel}: $cause; the read steps over the damaged bytes"
    advance.end = last(seg)
    false
  }

  /** Records in [start, end) (both record boundaries), using cached counts of whole sealed segments. */
  def countRecords(start: Long, end: Long): Long = {
    var records = 0L
    var position = start
    while (position < end) {
      val index = segmentIndex(position)
      if (index.isEmpty) return records
      val seg = segments(index.get)
      val cached = cache.segmentCounts.get(seg.baseOffset)
      if (cached.isDefined && position == first(seg) && end >= last(seg)) records += cached.get
      else {
        val advance = new Advance(position)
        walkSegment(index.get, isSealedSegment(index.get), advance, Limits.NoLimits, Some(end))
        records += advance.records
        if (advance.end < last(seg)) return records
      }
      position = last(seg)
    }
    records
  }

  def close(): Unit = {
    windows.values.foreach(_.close())
    windows.clear()
  }
}

object Tail {
  private final val HeaderBytes = 8

  /** Bytes per positioned read of a segment that is not memory-mapped. */
  private final val WindowBytes = 4 << 20

  /** `frame`: the segment's end filler (a BLANK, or a DLedger blank), nothing written, not a record. */
  private final val FrameBlank = -1
  private final val FrameEmpty = 0
  private final val FrameBad = -2

  /** What the write boundary at `at` (`left` bytes before the segment's end) holds (python tail.py `_frame`):
    * (the TOTALSIZE of a record whose header fits, in a DLedger log an entry with room for a blank after it,
    * §2.13, or FrameBlank / FrameEmpty / FrameBad with the cause).
    */
  private def frame(buf: ByteBuffer, at: Int, left: Long, lead: Int): (Int, String) = {
    val (first, second) = (buf.getInt(at), buf.getInt(at + 4))
    if (first == 0 && second == 0) (FrameEmpty, "")
    else if (lead > 0) {
      if (first == DLedgerEntry.BlankMagic) (FrameBlank, "")
      else if (
        first == Layout.DledgerEntryMagic && second - lead >= Layout.MinRecordSize &&
        second + Layout.EndFileMinBlankLength <= left
      ) (second - lead, "")
      else (FrameBad, s"DLedger entry magic $first, size $second: not an entry or blank")
    } else if (second == Layout.BlankMagic && first == left) (FrameBlank, "")
    else if (
      (second == Layout.MagicV1 || second == Layout.MagicV2) && first >= Layout.MinRecordSize &&
      first + Layout.EndFileMinBlankLength <= left
    ) (first, "")
    else (FrameBad, f"TOTALSIZE $first, magic 0x$second%08x: not a record or BLANK")
  }

  /** True when the 8 bytes at `at` are the beginning of a write: a BLANK or a record header (§2.2, §2.6), in a
    * DLedger log a DLedger blank or an entry header (§2.13); `left` is the bytes from `at` to the segment end.
    */
  private def writeStarted(buf: ByteBuffer, at: Int, left: Long, lead: Int): Boolean = {
    if (at + HeaderBytes > buf.limit() || left < HeaderBytes) return false
    val (first, second) = (buf.getInt(at), buf.getInt(at + 4))
    if (lead > 0) first == DLedgerEntry.BlankMagic || (first == Layout.DledgerEntryMagic && second > 0)
    else if (second == Layout.BlankMagic) first == left
    else (second == Layout.MagicV1 || second == Layout.MagicV2) && first > 0
  }

  /** The bytes of one segment: the whole mapping, or a window of positioned reads moved forward as needed. */
  private final class Window(file: RandomAccess) extends AutoCloseable {
    private var start = 0L
    var buffer: ByteBuffer = if (file.zeroCopy) file.read(0, math.min(file.length, Int.MaxValue).toInt) else null

    /** Index in `buffer` of segment byte `rel`, with [rel, rel + n) in `buffer` as far as the file has them. */
    def at(rel: Long, n: Int): Int = {
      val inside = buffer != null && rel >= start && rel + n <= start + buffer.limit()
      if (!inside && !(buffer != null && file.zeroCopy)) {
        buffer = file.read(rel, math.max(n, WindowBytes))
        start = rel
      }
      (rel - start).toInt
    }

    /** Index of the record at `rel` with its TOTALSIZE bytes and the `lead` bytes before it in `buffer` (as far
      * as the file has them).
      */
    def record(rel: Long, lead: Int): Int = {
      val at0 = at(rel, HeaderBytes)
      if (available(at0) < 4 || rel < lead) return at0
      val total = buffer.getInt(at0)
      if (total > HeaderBytes && total <= file.length - rel) at(rel - lead, lead + total) + lead
      else at(rel - lead, lead + HeaderBytes) + lead
    }

    def available(at: Int): Int = buffer.limit() - at

    def close(): Unit = file.close()
  }
}
