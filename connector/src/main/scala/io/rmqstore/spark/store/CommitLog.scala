package io.rmqstore.spark.store

import java.nio.ByteBuffer

import scala.collection.mutable

import io.rmqstore.spark.format.{BodyDecompressionException, DLedgerEntry, Layout, RecordCheck, RecordView, Resync}
import io.rmqstore.spark.io.{RandomAccess, StoreFileSystem}

/** Why a walk over a segment ended: at the end of its range, a BLANK, or an invalid record. */
private[store] final class WalkStop {
  var kind: Int = WalkStop.End
  var position: Long = 0L
  var reason: String = null
  var code: Int = 0
}

private[store] object WalkStop {
  final val End = 0
  final val Blank = 1
  final val Invalid = 2
}

/** The commit log read-only: segments, the valid end, record walks, resync (§2.1, §2.12), like
  * python/rmqstore/store/commitlog.py.
  *
  * Valid end (what recovery would keep, §2.12/§6.3), checked like `checkCRCOnRecover` (BODYCRC included); the
  * first invalid record (a torn tail, zeros, garbage) ends the log there and is not an error:
  *   - With an `abort` file (`crashMinTimestamp` is the checkpoint's getMinTimestamp()) it is where RocketMQ's
  *     abnormal recovery ends (§6.3): the walk starts at the first record of the last segment whose first record
  *     is valid with a store time in (0, getMinTimestamp()] (else the first segment), goes on through BLANKs into
  *     the next segments and stops at the first invalid record; never at E (a record before E can be where
  *     recovery stops). It may resume in each segment where an earlier such walk in this JVM stopped (`LogEndCache`,
  *     kept apart from the walks from E, which leave the records before E unchecked).
  *   - After a clean shutdown the last segment whose first record is valid (or a BLANK) holds the end; later
  *     segments are pre-allocated or stale. That segment is walked from the last record the broker's index has
  *     seen (`indexedEnd`: the newest index file's endPhyOffset, E) when that segment holds E and the record at
  *     E passes the same check (PHYSICALOFFSET == E included), else from 0 (no index file, E elsewhere, or an
  *     index that outlived lost commit-log pages); records before the start are checked when read, like those
  *     of older segments (FAILFAST / PERMISSIVE). A walk of the same file in this JVM resumes where the last
  *     one stopped when that is further (`LogEndCache`: the log is append-only). A clean shutdown leaves no torn
  *     write: when valid records follow where that walk stopped (`recordsAfter`), what stopped it is damage
  *     (docs/damage.md §2) and the valid end is where the last of them ends; reads report the damage or step
  *     over it.
  *
  * The walk reads windows growing from `ResumeWindow`, so a short one reads little. The same rule as
  * python/rmqstore/store/commitlog.py `CommitLog.end`. Segments wholly before the end are finished and
  * memory-mapped for scans; the segment holding the end is read by positioned reads in windows (the broker may
  * be writing it); a record cut by a window edge is re-read whole. Point and planning reads (`readAt`: a
  * record's check, header or store time, resync) are positioned reads of just their bytes in any segment: a
  * page fault in a map reads the whole read-ahead window around the page.
  *
  * Entry framing (`lead`): in a DLedger log (§2.13) each record is the body of an entry whose 48-byte header
  * comes right before it. Positions stay record positions (what consume queues, the index and msgIds hold);
  * windows start `lead` bytes early so the walk checks each header (`DLedgerEntry.problem`), a DLedger blank
  * ends a segment like a BLANK, and the valid end is where the first bad entry starts.
  */
private[spark] final class CommitLog(
    fs: StoreFileSystem,
    val segments: IndexedSeq[Segment],
    checkCrcAtEnd: Boolean,
    knownEnd: Option[Long],
    maxMessageSize: Int,
    indexedEnd: () => Option[Long],
    crashMinTimestamp: () => Option[Long] = () => None,
    val lead: Int = 0
) extends AutoCloseable {
  import CommitLog._

  private val files = mutable.HashMap.empty[(String, Boolean), RandomAccess]

  /** First byte of the first segment (older segments were deleted by retention, §2.1). */
  def minOffset: Long = if (segments.isEmpty) 0L else segments.head.baseOffset

  private var endReason: String = "valid end given when the store was opened"

  /** The valid end of the log (the recovery rule, see the class comment). */
  lazy val end: Long = knownEnd.getOrElse(findEnd())

  /** Why the valid end is where it is. */
  def endExplanation: String = { end; endReason }

  // Runs before the end is known: every segment it reads may be the one the broker writes.
  private def findEnd(): Long = {
    val stats = ScanStats()
    crashMinTimestamp() match {
      case Some(minTimestamp) if segments.nonEmpty && lead == 0 => // DLedger's own recovery: §2.13
        recoveredEnd(minTimestamp, stats)
      case Some(_) => cleanEnd(stats)
      case None =>
        val walked = cleanEnd(stats)
        val (records, stop, firstMs) = if (lead == 0) recordsAfter(walked, stats) else (0L, walked, 0L)
        if (records == 0 || leftovers(walked, firstMs, stats)) walked
        else {
          endReason = s"$endReason; without an abort file the log goes on: $records valid records follow, up to " +
            s"$stop, so what stopped that walk is damage (docs/damage.md §2)"
          stop
        }
    }
  }

  /** The valid records past `from` (the walk's end: in the segment holding it and later ones) and where the last
    * of them ends (`from` when there are none), found by resync, each checked like the walk for the end, damage
    * between them stepped over (python/rmqstore/store/commitlog.py `CommitLog._found_after`). Without an `abort`
    * file they move the valid end past the damage (class comment). A segment is searched only up to zeros where a
    * record would start that no index entry is past (`unwritten`): on a sound store this costs an 8-byte read at
    * the end (and at each later segment's start). Also the STORETIMESTAMP of the first of them.
    */
  private def recordsAfter(from: Long, stats: ScanStats): (Long, Long, Long) = {
    var records = 0L
    var stopAt = from
    var firstMs = Long.MinValue
    for (seg <- segments if seg.endOffset > from) {
      var pos = math.max(from - seg.baseOffset, 0L)
      while (pos >= 0 && pos < seg.size && !unwritten(seg, pos, stats)) {
        val found = resync(seg, pos, seg.size, stats)
        if (found < 0) pos = -1
        else {
          val stop = new WalkStop
          var walked = 0L
          walk(seg, found, seg.size, checkCrcAtEnd, stop, stats, finished = false) { v =>
            if (firstMs == Long.MinValue) firstMs = v.storeTimestampMs
            walked += 1
            true
          }
          records += walked
          if (walked > 0)
            stopAt = if (stop.kind == WalkStop.Invalid) seg.baseOffset + stop.position else seg.endOffset
          pos = if (stop.kind == WalkStop.Invalid) stop.position + 1 else -1
        }
      }
    }
    (records, stopAt, firstMs)
  }

  /** The records past the walk's end `walked` (the first stored at `firstMs`) are older than the last record
    * before it: leftovers past a crash's recovered end that the restarted broker's writes did not reach, not the
    * log going on (docs/damage.md §2; python/rmqstore/store/commitlog.py `CommitLog._leftovers`). Found records
    * are rare, so this walks the end's segment again.
    */
  private def leftovers(walked: Long, firstMs: Long, stats: ScanStats): Boolean =
    segments.find(s => s.baseOffset < walked && walked <= s.endOffset).exists { seg =>
      var lastMs = Long.MinValue
      walk(seg, lead.toLong, seg.size, checkCrcAtEnd, new WalkStop, stats, finished = false) { v =>
        lastMs = v.storeTimestampMs
        true
      }
      lastMs != Long.MinValue && firstMs < lastMs
    }

  /** Zeros where a record would start at `pos` and no index entry past it (E, `indexedEnd`): space the broker
    * never wrote, the end of what was written (docs/damage.md §2).
    */
  private def unwritten(seg: Segment, pos: Long, stats: ScanStats): Boolean =
    lastIndexed.forall(_ <= seg.baseOffset + pos) && {
      val buf = read(seg, pos, 8, stats, finished = false)
      (0 until buf.limit()).forall(buf.get(_) == 0)
    }

  private def cleanEnd(stats: ScanStats): Long = {
    val holding =
      segments.reverseIterator.map(seg => seg -> recordAt(seg, lead, checkCrcAtEnd, stats)._2)
        .find { case (_, first) => first == RecordCheck.Blank || first > 0 }
    holding match {
      case None =>
        endReason = "no segment starts with a valid record: the log is empty"
        minOffset
      case Some((seg, RecordCheck.Blank)) =>
        endReason = s"${seg.path} starts with a BLANK"
        seg.endOffset
      case Some((seg, _)) =>
        val stop = new WalkStop
        val from = math.max(
          math.max(walkStart(seg, stats), lead.toLong),
          LogEndCache.resumeAt(seg, checkCrcAtEnd, recovery = false)(pos =>
            recordAt(seg, pos, checkCrcAtEnd, stats)._2
          )
        )
        var lastStart = -1L
        walk(seg, from, seg.size, checkCrcAtEnd, stop, stats, finished = false, ResumeWindow) {
          v =>
            lastStart = v.physicalOffset - seg.baseOffset
            true
        }
        if (lastStart >= 0) LogEndCache.remember(seg, checkCrcAtEnd, recovery = false, lastStart, stop.position)
        if (stop.kind == WalkStop.Invalid) {
          val what = if (lead > 0) "DLedger entry" else "record"
          endReason = s"${seg.path}: first invalid $what at position ${stop.position - lead}: ${stop.reason}"
          seg.baseOffset + stop.position - lead
        } else {
          endReason = s"${seg.path} is complete"
          seg.endOffset
        }
    }
  }

  /** Where abnormal recovery ends the log (`CommitLog.recoverAbnormally`, §6.3): walked from `recoveryStart`, on
    * through each BLANK into the next segment, to the first invalid record.
    */
  private def recoveredEnd(minTimestamp: Long, stats: ScanStats): Long = {
    val first = recoveryStart(minTimestamp, stats)
    val origin = s"recovery after a crash from ${segments(first).path}"
    var i = first
    var found = -1L
    while (found < 0) {
      val seg = segments(i)
      val from =
        LogEndCache.resumeAt(seg, checkCrcAtEnd, recovery = true)(recordAt(seg, _, checkCrcAtEnd, stats)._2)
      val stop = new WalkStop
      var lastStart = -1L
      walk(seg, from, seg.size, checkCrcAtEnd, stop, stats, finished = false, if (from > 0) ResumeWindow else 0) {
        v =>
          lastStart = v.physicalOffset - seg.baseOffset
          true
      }
      if (lastStart >= 0) LogEndCache.remember(seg, checkCrcAtEnd, recovery = true, lastStart, stop.position)
      if (stop.kind == WalkStop.Blank && i + 1 < segments.length) i += 1
      else {
        if (stop.kind == WalkStop.Invalid) {
          endReason = s"${seg.path}: first invalid record at position ${stop.position} ($origin): ${stop.reason}"
          found = seg.baseOffset + stop.position
        } else {
          endReason = s"${seg.path} is complete ($origin)"
          found = seg.endOffset
        }
      }
    }
    found
  }

  /** The segment abnormal recovery starts from (`isMappedFileMatchedRecover`, §6.3): the last whose first record
    * is valid with a store time in (0, minTimestamp], else the first.
    */
  private def recoveryStart(minTimestamp: Long, stats: ScanStats): Int =
    (segments.length - 1 until 0 by -1).find { i =>
      val (buf, code) = recordAt(segments(i), 0, checkCrcAtEnd, stats)
      code >= Layout.MinRecordSize && {
        val storeTime = buf.getLong(Layout.storeTimestampOffset(buf.getInt(Layout.OffSysFlag)))
        storeTime > 0 && storeTime <= minTimestamp
      }
    }.getOrElse(0)

  /** E (`indexedEnd`), read once. */
  private lazy val lastIndexed: Option[Long] = indexedEnd()

  /** Where the walk for the valid end of `seg` starts (class comment): the position of E in `seg` when it
    * holds E and the record there is valid, else 0.
    */
  private def walkStart(seg: Segment, stats: ScanStats): Long =
    lastIndexed.filter(e => seg.contains(e) && e > seg.baseOffset).fold(0L) { e =>
      val pos = e - seg.baseOffset
      if (recordAt(seg, pos, checkCrcAtEnd, stats)._2 >= Layout.MinRecordSize) pos else 0L
    }

  /** Sealed segments lie wholly before the valid end: the broker no longer writes them, so they are mapped. */
  def isSealed(seg: Segment): Boolean = seg.endOffset <= end

  private def file(seg: Segment, finished: Boolean): RandomAccess =
    files.getOrElseUpdate((seg.path, finished), fs.open(seg.path, finished))

  /** Bytes [pos, pos + len) of a segment, clipped to the file, counted in `stats`. */
  def read(seg: Segment, pos: Long, len: Int, stats: ScanStats, finished: Boolean): ByteBuffer = {
    val buf = file(seg, finished).read(pos, len)
    stats.bytesRead += buf.limit()
    buf
  }

  /** `read` of several ranges of a segment in one batch (`RandomAccess.readRanges`), counted in `stats`. */
  def readRanges(seg: Segment, ranges: Seq[(Long, Int)], stats: ScanStats, finished: Boolean): Seq[ByteBuffer] = {
    val buffers = file(seg, finished).readRanges(ranges)
    buffers.foreach(b => stats.bytesRead += b.limit())
    buffers
  }

  /** `read` for a point or planning read: a positioned read of just these bytes (an unfinished file is never
    * mapped, `StoreFileSystem.open`), whatever the segment.
    */
  def readAt(seg: Segment, pos: Long, len: Int, stats: ScanStats): ByteBuffer =
    read(seg, pos, len, stats, finished = false)

  /** `readRanges` for point reads (`readAt`). */
  def readRangesAt(seg: Segment, ranges: Seq[(Long, Int)], stats: ScanStats): Seq[ByteBuffer] =
    readRanges(seg, ranges, stats, finished = false)

  private def windowCap(seg: Segment, finished: Boolean): Int =
    if (file(seg, finished).zeroCopy) Int.MaxValue else RemoteWindow

  /** The bytes of the record at `pos` (index 0 = its first byte; two reads at most) and its
    * `RecordCheck.check` code (PHYSICALOFFSET compared with the position); in a DLedger log its entry header
    * is checked too (`entryProblem` says why it fails).
    */
  def recordAt(seg: Segment, pos: Long, verifyCrc: Boolean, stats: ScanStats): (ByteBuffer, Int) = {
    if (pos < lead) return (ByteBuffer.allocate(0), RecordCheck.TooShort)
    var buf = readAt(seg, pos - lead, ProbeBytes, stats)
    if (blankAt(buf, lead)) return (slice(buf, lead), RecordCheck.Blank)
    if (buf.limit() >= lead + 4) {
      val total = buf.getInt(lead)
      if (buf.limit() < total + lead && total <= seg.size - pos)
        buf = readAt(seg, pos - lead, total + lead, stats)
    }
    val code = RecordCheck.check(buf, lead, buf.limit(), verifyCrc, seg.baseOffset + pos)
    val framed = code <= 0 || entryProblem(buf, lead, seg.baseOffset + pos - lead, code) == null
    (slice(buf, lead), if (framed) code else RecordCheck.BadEntryHeader)
  }

  private def slice(buf: ByteBuffer, from: Int): ByteBuffer =
    if (from == 0) buf else buf.duplicate().position(math.min(from, buf.limit())).slice()

  /** The record position `at` of `buf` holds the segment's end filler: a BLANK record, or in a DLedger log a
    * DLedger blank in the entry header before it.
    */
  private def blankAt(buf: ByteBuffer, at: Int): Boolean =
    if (lead > 0) at >= lead && buf.limit() - (at - lead) >= 4 && buf.getInt(at - lead) == DLedgerEntry.BlankMagic
    else buf.limit() - at >= 8 && buf.getInt(at + Layout.OffMagic) == Layout.BlankMagic

  /** Why the entry header before the `size`-byte record at `at` of `buf` (whose buf(0) is at physical `base`)
    * is not DLedger's; null when it is, or without framing.
    */
  private def entryProblem(buf: ByteBuffer, at: Int, base: Long, size: Int): String =
    if (lead == 0) null else DLedgerEntry.problem(buf, at - lead, base, size)

  /** STORETIMESTAMP of the record at `pos` (a record start found by a walk or resync). */
  def storeTimeAt(seg: Segment, pos: Long, stats: ScanStats): Long = {
    val head = readAt(seg, pos, Layout.OffSysFlag + 4, stats)
    val at = Layout.storeTimestampOffset(head.getInt(Layout.OffSysFlag))
    readAt(seg, pos + at, 8, stats).getLong(0)
  }

  /** Position of the first record start in [pos, hi) of a segment, -1 when there is none.
    *
    * The first read is `ResyncFirstWindow` bytes (a record start is usually near); a miss re-reads from
    * `pos` with a 4x larger window up to `RemoteWindow` (point reads, `readAt`), then windows slide on,
    * overlapping by `TailSlack` so a record cut by one window is whole in the next.
    */
  def resync(seg: Segment, from: Long, hi: Long, stats: ScanStats): Long = {
    val cap = RemoteWindow
    var window = ResyncFirstWindow
    var pos = from
    while (pos < hi) {
      val length = math.min(math.min(seg.size - pos, hi - pos + TailSlack), window.toLong).toInt
      val buf = readAt(seg, pos, length, stats)
      val lim = buf.limit()
      val found =
        Resync.nextRecordStart(buf, 0, math.min(hi - pos, lim.toLong).toInt, seg.baseOffset + pos, seg.endOffset)
      if (found >= 0) return pos + found
      if (lim == window && window < cap) window = math.min(window.toLong * 4, cap.toLong).toInt
      else if (pos + lim >= math.min(hi, seg.size) || lim <= TailSlack) return -1
      else pos += lim - TailSlack
    }
    -1
  }

  /** Valid records starting in [from, hi) of a segment, `from` being a record start; `f` returns false
    * to stop early. Ends at `hi`, a BLANK or the first invalid record; `stop` says which and where. With
    * `firstWindow`, windows grow from that size (x4 each) to the usual one: for walks that usually end soon.
    */
  def walk(
      seg: Segment,
      from: Long,
      hi: Long,
      verifyCrc: Boolean,
      stop: WalkStop,
      stats: ScanStats,
      finished: Boolean,
      firstWindow: Int = 0
  )(f: RecordView => Boolean): Unit = {
    val view = new RecordView()
    view.maxBodySize = maxMessageSize
    val cap = windowCap(seg, finished)
    var window = if (firstWindow > 0) math.min(firstWindow, cap) else cap
    var pos = from
    var need = 0L
    while (pos < hi) {
      val length = math.min(seg.size - pos, math.max(math.min(hi - pos + TailSlack, window.toLong), need)).toInt
      window = math.min(window.toLong * 4, cap.toLong).toInt
      val first = pos - lead // buf(0): the entry header before the record at pos (class comment)
      val buf = read(seg, first, length + lead, stats, finished)
      val lim = buf.limit()
      val bound = math.min(hi - first, lim.toLong).toInt
      val base = seg.baseOffset + first
      var i = lead
      var code = 1
      var framing: String = null
      while (code > 0 && i < bound) {
        code =
          if (blankAt(buf, i) && lead > 0) RecordCheck.Blank else RecordCheck.check(buf, i, lim, verifyCrc, base + i)
        if (lead > 0 && code != RecordCheck.Blank) { // the header first, like DLedger's recovery
          framing = entryProblem(buf, i, base, if (code >= Layout.MinRecordSize) code else -1)
          if (framing != null) code = RecordCheck.BadEntryHeader
        }
        if (code >= Layout.MinRecordSize) {
          stats.records += 1
          if (!f(view.reset(buf, i, base + i))) {
            stop.kind = WalkStop.End
            stop.position = first + i + code + lead
            return
          }
          i += code + lead
        } else if (code > 0) code = RecordCheck.TooSmall
      }
      if (code > 0) {
        pos = first + i
        need = 0
      } else {
        val cut = if (code == RecordCheck.Blank) Cut.Blank
        else if (framing != null) Cut.No
        else cutByWindow(buf, i, seg.size - first)
        if (cut == Cut.Blank) {
          stop.kind = WalkStop.Blank
          stop.position = first + i
          return
        }
        if (cut > 0 && first + lim < seg.size) {
          pos = first + i
          need = cut
        } else {
          stop.kind = WalkStop.Invalid
          stop.position = first + i
          stop.code = code
          stop.reason = if (framing != null) framing else RecordCheck.describe(buf, i, lim, verifyCrc, base + i)
          return
        }
      }
    }
    reached(seg, pos, verifyCrc, stop, stats)
  }

  /** Where a segment's part of the valid log ends. */
  private def validEndIn(seg: Segment): Long = math.min(seg.size, end - seg.baseOffset)

  /** `stop` for a walk that reached its range end at the record start `pos`: End, or Invalid when that
    * record (inside the valid log) fails the check. A range starting inside the record before resyncs
    * past an invalid one silently, so damage starting exactly there is reported by this walk.
    */
  private def reached(seg: Segment, pos: Long, verifyCrc: Boolean, stop: WalkStop, stats: ScanStats): Unit = {
    stop.kind = WalkStop.End
    stop.position = pos
    if (pos < seg.size && pos < validEndIn(seg)) {
      val (buf, code) = recordAt(seg, pos, verifyCrc, stats)
      if (code < 0) {
        stop.kind = WalkStop.Invalid
        stop.code = code
        stop.reason = invalidReason(seg, pos, buf, verifyCrc)
      }
    }
  }

  /** Why the record `recordAt(seg, pos)` returned in `buf` is invalid: its own check, else its entry header. */
  private def invalidReason(seg: Segment, pos: Long, buf: ByteBuffer, verifyCrc: Boolean): String = {
    val code = RecordCheck.check(buf, 0, buf.limit(), verifyCrc, seg.baseOffset + pos)
    if (code < 0 || lead == 0) RecordCheck.describe(buf, 0, buf.limit(), verifyCrc, seg.baseOffset + pos)
    else {
      val framed = readAt(seg, pos - lead, lead + code, ScanStats())
      DLedgerEntry.problem(framed, 0, seg.baseOffset + pos - lead, code)
    }
  }

  /** Walk [lo, hi) of the log (any byte positions): per segment, resync to the first record start at or
    * after the range start and walk. An invalid record before the valid end raises
    * StoreCorruptionException (FAILFAST) or is stepped over (PERMISSIVE, `skipDamage`); so is a record
    * whose body `f` cannot decompress (`handOver`). Damage at the first record start at or after `end` is
    * reported too (`reached`).
    */
  def chunks(
      start: Long,
      end: Long,
      verifyCrc: Boolean,
      permissive: Boolean,
      stats: ScanStats
  )(f: RecordView => Boolean): Unit = {
    val lo = math.max(start, minOffset)
    val hi = math.min(end, this.end)
    val it = segments.iterator
    var going = true
    while (going && it.hasNext) {
      val seg = it.next()
      val l = math.max(lo, seg.baseOffset)
      val h = math.min(hi, seg.endOffset) - seg.baseOffset
      if (l - seg.baseOffset < h) {
        var pos = math.max(l - seg.baseOffset, lead.toLong) // a segment's first record follows its entry header
        if (pos > lead) pos = resync(seg, pos, h, stats)
        while (going && pos >= 0 && pos < h) {
          val stop = new WalkStop
          walk(seg, pos, h, verifyCrc, stop, stats, isSealed(seg)) { v =>
            going = handOver(seg.path, v, permissive, stats, f)
            going
          }
          pos = if (going && stop.kind == WalkStop.Invalid) skipDamage(seg, stop, permissive, stats) else -1
        }
      }
    }
  }

  /** The records of `chunks(a, b)` for each of `ranges` (sorted and disjoint), in log order: for many small
    * ranges starting at record starts (the bytes no consume queue covers, what the index lacks). The ranges of
    * one segment of at most `GatherRangeBytes` each are read together (`readRanges`, batches of up to
    * `ReadBatchBytes`: a remote file fetches them in one vectored read, not one request and
    * `TailSlack` each) and walked; a range whose walk does not reach exactly its end (a BLANK, an invalid
    * record, a record reaching past it, no record start at its start) is read by `chunks` instead, with
    * its errors and counters (python/rmqstore/store/store.py `scan_ranges`).
    */
  def rangeChunks(ranges: Seq[(Long, Long)], verifyCrc: Boolean, permissive: Boolean, stats: ScanStats)(
      f: RecordView => Boolean
  ): Unit = {
    val wanted = ranges.map { case (a, b) => (math.max(a, minOffset), math.min(b, end)) }.filter(r => r._1 < r._2)
    def gathered(seg: Segment, r: (Long, Long)) = // DLedger (§2.13): by `chunks`
      lead == 0 && seg.baseOffset <= r._1 && r._2 <= seg.endOffset && r._2 - r._1 <= GatherRangeBytes
    val view = new RecordView()
    view.maxBodySize = maxMessageSize
    var going = true
    val each: RecordView => Boolean = { v => going = f(v); going }
    var i = 0
    while (going && i < wanted.length) {
      Segments.find(segments, wanted(i)._1).filter(gathered(_, wanted(i))) match {
        case None =>
          chunks(wanted(i)._1, wanted(i)._2, verifyCrc, permissive, stats)(each)
          i += 1
        case Some(seg) =>
          var j = i + 1
          var bytes = wanted(i)._2 - wanted(i)._1
          while (
            j < wanted.length && gathered(seg, wanted(j)) && bytes + wanted(j)._2 - wanted(j)._1 <= ReadBatchBytes
          ) {
            bytes += wanted(j)._2 - wanted(j)._1
            j += 1
          }
          val batch = wanted.slice(i, j)
          val buffers =
            readRanges(seg, batch.map { case (a, b) => (a - seg.baseOffset, (b - a).toInt) }, stats, isSealed(seg))
          for (((a, b), buf) <- batch.zip(buffers) if going) {
            val starts = cleanStarts(buf, (b - a).toInt, a, verifyCrc)
            if (starts == null) chunks(a, b, verifyCrc, permissive, stats)(each)
            else
              starts.iterator.takeWhile(_ => going).foreach { at =>
                stats.records += 1
                going = handOver(seg.path, view.reset(buf, at, a + at), permissive, stats, f)
              }
          }
          i = j
      }
    }
  }

  /** Positions of the records tiling `buf` exactly (`length` bytes of the log from physical offset `base`,
    * checked like a walk), null when they do not: for `rangeChunks`.
    */
  private def cleanStarts(buf: ByteBuffer, length: Int, base: Long, verifyCrc: Boolean): Array[Int] = {
    if (buf.limit() != length) return null
    val starts = mutable.ArrayBuilder.make[Int]
    var i = 0
    while (i < length) {
      val code = RecordCheck.check(buf, i, length, verifyCrc, base + i)
      if (code < Layout.MinRecordSize) return null
      starts += i
      i += code
    }
    if (i == length) starts.result() else null
  }

  /** Where reading resumes after the invalid record at `stop`: the next record start (or the
    * segment-ending BLANK) up to the segment's valid end, else that end. FAILFAST raises
    * StoreCorruptionException; PERMISSIVE counts the place and the bytes up to the resume point.
    */
  private def skipDamage(seg: Segment, stop: WalkStop, permissive: Boolean, stats: ScanStats): Long = {
    val offset = seg.baseOffset + stop.position
    if (!permissive) throw new StoreCorruptionException(seg.path, offset, s"invalid record: ${stop.reason}")
    val limit = validEndIn(seg)
    val found = resync(seg, stop.position + 1, limit, stats)
    val resume = if (found < 0) limit else found
    stats.skip(seg.path, offset, resume - stop.position, s"invalid record (${stop.reason})")
    if (stop.code == RecordCheck.BodyCrcMismatch) stats.crcFailures += 1
    resume
  }

  /** A segment opened for positioned reads of its own (`mapped`: memory-mapped, for files no longer written). */
  def openSegment(seg: Segment, mapped: Boolean): RandomAccess = fs.open(seg.path, mapped)

  def close(): Unit = {
    files.values.foreach(_.close())
    files.clear()
  }
}

private[store] object CommitLog {

  /** `rangeChunks` and `RecordReader.readAt` fetch reads of one segment in batches of at most this many bytes. */
  final val ReadBatchBytes: Long = 8L << 20

  /** `f(v)`, where a body that cannot be decompressed raises StoreCorruptionException naming the file
    * and the record's offset (FAILFAST) or leaves the record out and counts it (PERMISSIVE). `f` must
    * decompress before writing anything of the record.
    */
  def handOver(path: String, v: RecordView, permissive: Boolean, stats: ScanStats, f: RecordView => Boolean): Boolean =
    try f(v)
    catch {
      case e: BodyDecompressionException =>
        if (!permissive) throw new StoreCorruptionException(path, v.physicalOffset, e.getMessage, e)
        stats.records -= 1
        stats.skip(path, v.physicalOffset, v.totalSize, e.getMessage)
        true
    }

  /** Largest single ranged read of a segment that is not memory-mapped. */
  final val RemoteWindow: Int = 8 << 20

  /** Read this much past a range end so the range's last record usually arrives in the same request. */
  final val TailSlack: Int = 64 << 10

  /** First read of a resync: the next record start is usually within a few kilobytes. */
  final val ResyncFirstWindow: Int = 8 << 10

  /** `rangeChunks` reads ranges up to this size together (python/rmqstore/store/records.py `GATHER_RANGE_BYTES`). */
  final val GatherRangeBytes: Long = 1L << 20

  /** First read at a single record: most records fit, bigger ones get a second read. */
  final val ProbeBytes: Int = 4 << 10

  /** First window of the walk for the valid end (python/rmqstore/store/commitlog.py `RESUME_WINDOW`, which
    * Python uses for walks that do not start at 0); each further window is 4x longer, up to the usual one.
    */
  final val ResumeWindow: Int = 16 << 10

  private object Cut {
    final val Blank = -2L
    final val No = 0L
  }

  /** Whether a walk stopped at `at` only because the window ended inside the record: `Cut.Blank` for a
    * BLANK whose size runs past the window, the bytes to re-read from `at` for a cut record, else `Cut.No`.
    */
  private def cutByWindow(buf: ByteBuffer, at: Int, leftInSegment: Long): Long = {
    val leftInBuf = buf.limit() - at
    if (leftInBuf < 8) return if (leftInSegment > leftInBuf) math.min(ProbeBytes.toLong, leftInSegment) else Cut.No
    if (buf.getInt(at + Layout.OffMagic) == Layout.BlankMagic) return Cut.Blank
    val total = buf.getInt(at).toLong
    if (leftInBuf < total && total <= leftInSegment) total else Cut.No
  }
}
