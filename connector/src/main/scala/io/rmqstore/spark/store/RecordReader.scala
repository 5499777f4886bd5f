package io.rmqstore.spark.store

import java.nio.ByteBuffer

import scala.collection.mutable

import io.rmqstore.spark.format.{RecordCheck, RecordView}

/** Reads records of the commit log: ranges, scans, points (design §3.1, §4.3); the Python engine's
  * RecordReader (store/records.py). A service of the store facade (docs/design.md §1); Callbacks get one reused
  * `RecordView`, valid only during the call.
  */
private[spark] final class RecordReader(log: CommitLog, maxMessageSize: Int) {
  import RecordReader._

  /** Walk the records whose commitLogOffset is in [start, end) ∩ [minOffset, logEnd), in log order.
    *
    * `start` may be any byte: the first record start at or after it is found by resync, so ranges
    * that tile the log yield every record exactly once. An invalid record, or a body `f` cannot
    * decompress (BodyDecompressionException from `RecordView.body`, thrown before `f` writes
    * anything of the record), raises StoreCorruptionException naming file and physical offset
    * (FAILFAST) or is counted in the stats and stepped over (PERMISSIVE: reading resumes at the next
    * valid record start; the bad body's record is left out).
    */
  def scan(start: Long, end: Long, verifyCrc: Boolean, permissive: Boolean)(f: RecordView => Unit): ScanStats =
    scanWhile(start, end, verifyCrc, permissive) { v => f(v); true }

  /** `scan`, stopping after the first record for which `f` returns false. */
  def scanWhile(start: Long, end: Long, verifyCrc: Boolean, permissive: Boolean)(f: RecordView => Boolean)
      : ScanStats = {
    val stats = ScanStats()
    log.chunks(start, end, verifyCrc, permissive, stats)(f)
    stats
  }

  /** `scan` of each of `ranges` (sorted and disjoint), in log order, the small ranges of a segment read together
    * (`CommitLog.rangeChunks`): for many small ranges starting at record starts.
    */
  def scanRanges(
      ranges: Seq[(Long, Long)],
      verifyCrc: Boolean,
      permissive: Boolean
  )(f: RecordView => Unit): ScanStats = {
    val stats = ScanStats()
    log.rangeChunks(ranges, verifyCrc, permissive, stats) { v => f(v); true }
    stats
  }

  /** The first record start at or after `offset` (a segment start after a segment's BLANK), `logEnd` if none. */
  def resync(offset: Long): Long = {
    val stats = ScanStats()
    val end = log.end
    val from = math.max(offset, log.minOffset)
    val starts = log.segments.iterator.filter(seg => seg.endOffset > from && seg.baseOffset < end).map { seg =>
      val pos = math.max(from - seg.baseOffset, 0L)
      val hi = math.min(end, seg.endOffset) - seg.baseOffset
      val found = if (pos <= log.lead) log.lead.toLong else log.resync(seg, pos, hi, stats)
      val isRecord =
        found >= 0 && found < hi && log.recordAt(seg, found, verifyCrc = false, stats)._2 > 0
      if (isRecord) seg.baseOffset + found else -1L
    }
    starts.find(_ >= 0).getOrElse(end)
  }

  /** Each segment's part of [minOffset, logEnd), in log order, empty parts left out (python/rmqstore/store/store.py
    * `segment_spans`): a range owns the records starting in it; `plan.Split.splitSpans` cuts spans into tasks.
    */
  def segmentSpans: IndexedSeq[(Long, Long)] = {
    val end = log.end
    log.segments.map(seg => (math.max(log.minOffset, seg.baseOffset), math.min(end, seg.endOffset))).filter(s =>
      s._1 < s._2
    )
  }

  /** The records starting at the given physical offsets, ascending, each offset once.
    *
    * Offsets outside [minOffset, logEnd) hold no record and are left out. With `strict`, an offset inside
    * that range that is not a valid record start (checked like §2.12 plus PHYSICALOFFSET == offset) raises
    * StoreCorruptionException (FAILFAST) or is counted (PERMISSIVE); without it such offsets are simply
    * left out (index candidates, user-typed offsets).
    */
  def readAt(offsets: Array[Long], verifyCrc: Boolean, permissive: Boolean, strict: Boolean = true)(
      f: RecordView => Unit
  ): ScanStats = {
    val stats = ScanStats()
    val end = log.end
    val wanted = offsets.filter(o => o >= log.minOffset && o < end).distinct.sorted
    val view = new RecordView()
    view.maxBodySize = maxMessageSize
    val runs = mutable.ArrayBuffer.empty[(Segment, Array[Long])]
    var i = 0
    while (i < wanted.length) {
      Segments.find(log.segments, wanted(i)) match {
        case None => i += 1
        case Some(seg) =>
          var j = i + 1
          while (j < wanted.length && wanted(j) < seg.endOffset && wanted(j) - wanted(j - 1) < ReadRunGap) j += 1
          runs += ((seg, wanted.slice(i, j)))
          i = j
      }
    }
    // The first reads of consecutive runs of one segment, up to ReadBatchBytes, are one batch (`readRanges`:
    // a remote file fetches them concurrently, a mapped one hands out slices). Runs of one offset are point
    // reads (`CommitLog.readRangesAt`): a page fault in the map would read the read-ahead window around them.
    var k = 0
    while (k < runs.length) {
      val seg = runs(k)._1
      var end = k + 1
      var bytes = firstRead(seg, runs(k)._2)._2.toLong
      while (end < runs.length && (runs(end)._1 eq seg) && bytes + firstRead(seg, runs(end)._2)._2 <= ReadBatchBytes) {
        bytes += firstRead(seg, runs(end)._2)._2
        end += 1
      }
      val (points, spans) = runs.slice(k, end).map(_._2).toSeq.partition(_.length == 1)
      val read = points.zip(firstReads(seg, points, stats)) ++ spans.zip(firstReads(seg, spans, stats))
      for ((run, buf) <- read.sortBy(_._1.head)) readRun(seg, run, buf, verifyCrc, permissive, strict, stats, view, f)
      k = end
    }
    stats
  }

  // The first reads of runs of one segment, all of one offset (point reads) or all longer, in one batch.
  private def firstReads(seg: Segment, runs: Seq[Array[Long]], stats: ScanStats): Seq[ByteBuffer] =
    if (runs.isEmpty) Nil
    else if (runs.head.length == 1) log.readRangesAt(seg, runs.map(firstRead(seg, _)), stats)
    else log.readRanges(seg, runs.map(firstRead(seg, _)), stats, log.isSealed(seg))

  // (position, length) of the first read of a run of offsets of one segment: the run and a record's worth after.
  private def firstRead(seg: Segment, run: Array[Long]): (Long, Int) = {
    val first = run.head - seg.baseOffset
    (first, math.min(run.last - run.head + ProbeBytes, seg.size - first).toInt)
  }

  // One window over a run of offsets of one segment (`initial`: its first read); records cut by the window get
  // a longer read.
  private def readRun(
      seg: Segment,
      run: Array[Long],
      initial: ByteBuffer,
      verifyCrc: Boolean,
      permissive: Boolean,
      strict: Boolean,
      stats: ScanStats,
      view: RecordView,
      f: RecordView => Unit
  ): Unit = {
    val finished = log.isSealed(seg) && run.length > 1 // one offset: a point read (`CommitLog.readAt`)
    val (first, firstLength) = firstRead(seg, run)
    var length = firstLength.toLong
    var done = false
    var next = initial
    while (!done) {
      val buf = if (next != null) next else log.read(seg, first, length.toInt, stats, finished)
      next = null
      val lim = buf.limit()
      var longest = length
      val good = mutable.ArrayBuilder.make[Int]
      for (offset <- run) {
        val pos = (offset - seg.baseOffset - first).toInt
        val code = RecordCheck.check(buf, pos, lim, verifyCrc, offset)
        if (code > 0) good += pos
        else {
          val total = if (lim - pos >= 4) buf.getInt(pos).toLong else Long.MaxValue
          if (first + lim < seg.size && lim - pos < total && total <= seg.size - first - pos)
            longest = math.max(longest, pos + total)
          else if (strict) {
            val reason =
              if (code == RecordCheck.Blank) "BLANK record" else RecordCheck.describe(buf, pos, lim, verifyCrc, offset)
            if (!permissive) throw new StoreCorruptionException(seg.path, offset, s"no valid record: $reason")
            stats.skip(seg.path, offset, 0, s"no valid record: $reason")
            if (code == RecordCheck.BodyCrcMismatch) stats.crcFailures += 1
          }
        }
      }
      if (longest == length) {
        for (pos <- good.result()) {
          stats.records += 1
          CommitLog.handOver(
            seg.path,
            view.reset(buf, pos, seg.baseOffset + first + pos),
            permissive,
            stats,
            { v =>
              f(v)
              true
            }
          )
        }
        done = true
      } else length = longest
    }
  }
}

private[spark] object RecordReader {

  /** `readAt` reads records closer than this in one request. */
  final val ReadRunGap = 64L << 10

  private final val ReadBatchBytes = CommitLog.ReadBatchBytes

  private final val ProbeBytes = CommitLog.ProbeBytes
}
