package io.rmqstore.spark.store

import scala.collection.mutable

/** Records [start, end) of the log (physical offsets) with store times in [firstMs, lastMs], non-decreasing
  * in log order when `ordered`.
  */
final case class TimeRun(start: Long, end: Long, firstMs: Long, lastMs: Long, ordered: Boolean)

/** Where store times lie in the commit log: exact seeks by storeTimestamp (design §3.5), like
  * python/rmqstore/store/timeline.py.
  *
  * The broker stamps STORETIMESTAMP under the put lock, so store times never decrease in log order - unless
  * its clock steps back, by any amount. Each segment's records are summarized as runs: maximal stretches
  * whose store times never decrease, with byte range and first / last time. The first record with time
  * >= t is in the first run whose last time is >= t (every record before that run is < t), found inside
  * the run by bisection; the records of a window [a, b] are, in each run whose times reach into it, a
  * stretch found by bisection at a and b + 1. A segment with more than `MaxRuns` runs (a jittering clock)
  * is one unordered run: its smallest / largest time, walked by a seek, taken whole by a window.
  *
  * A summary costs one walk of a segment's record headers (store times only, PERMISSIVE like a scan). It
  * is cached in memory per JVM by segment identity (path, size, last-modified time, where its records
  * end); unlike Python there is no on-disk cache, so a new JVM walks each segment once again.
  */
private[spark] final class Timeline(log: CommitLog) {
  import Timeline._

  /** The runs of every segment holding records, in log order. */
  lazy val runs: IndexedSeq[TimeRun] =
    log.segments.filter(_.baseOffset < log.end).flatMap { seg =>
      val identity = Identity(seg.path, seg.size, seg.modifiedMs, math.min(seg.endOffset, log.end))
      Option(summaries.get(identity)).getOrElse {
        val summary = summarize(seg)
        summaries.put(identity, summary)
        summary
      }
    }

  /** Physical offset of the first record with storeTimestamp >= ms, the log's end if none. */
  def firstAtOrAfter(ms: Long): Long = runs.find(_.lastMs >= ms).fold(log.end)(firstInRun(_, ms))

  /** Commit-log byte ranges [start, end), in log order, holding every record with beginMs <= storeTimestamp
    * <= endMs (Long.MinValue / Long.MaxValue: unbounded): in each run whose times reach into the window, its
    * records inside the window or, for an unordered run, all of them. Ranges of consecutive runs taken
    * whole are merged (no record lies between them).
    */
  def ranges(beginMs: Long, endMs: Long): Seq[(Long, Long)] = {
    val out = mutable.ArrayBuffer.empty[(Long, Long)]
    var lastWhole = -2
    for ((run, number) <- runs.zipWithIndex if run.firstMs <= endMs && run.lastMs >= beginMs) {
      val start = if (run.ordered && run.firstMs < beginMs) firstInRun(run, beginMs) else run.start
      val stop = if (run.ordered && run.lastMs > endMs) firstInRun(run, endMs + 1) else run.end
      if (start < stop) {
        if (lastWhole == number - 1 && start == run.start) out(out.length - 1) = (out.last._1, stop)
        else out += ((start, stop))
        lastWhole = if (stop == run.end) number else -2
      }
    }
    out.toSeq
  }

  /** The runs of one segment's records (class comment). */
  private def summarize(seg: Segment): IndexedSeq[TimeRun] = {
    val found = mutable.ArrayBuffer.empty[TimeRun]
    var current: TimeRun = null
    log.chunks(seg.baseOffset, math.min(seg.endOffset, log.end), verifyCrc = false, permissive = true, ScanStats()) {
      v =>
        val t = v.storeTimestampMs
        val end = v.physicalOffset + v.totalSize
        if (current != null && t >= current.lastMs) current = current.copy(end = end, lastMs = t)
        else {
          if (current != null) found += current
          current = TimeRun(v.physicalOffset, end, t, t, ordered = true)
        }
        true
    }
    if (current != null) found += current
    if (found.length <= MaxRuns) found.toIndexedSeq
    else IndexedSeq(TimeRun(found.head.start, found.last.end, found.map(_.firstMs).min, found.map(_.lastMs).max, false))
  }

  /** Offset of the first record of `run` with time >= ms (`run.end` if none): a bisection when the run is
    * ordered, then a walk forward through windows of growing size.
    */
  private def firstInRun(run: TimeRun, ms: Long): Long = {
    var start = if (run.ordered) bisect(run, ms) else run.start
    var window = SeekFirstWindow
    while (start < run.end) { // ranges [start, stop): each record is in exactly one
      val stop = math.min(start + window, run.end)
      var found = -1L
      log.chunks(start, stop, verifyCrc = false, permissive = true, ScanStats()) { v =>
        if (v.storeTimestampMs >= ms) found = v.physicalOffset
        found < 0
      }
      if (found >= 0) return found
      start = stop
      window *= 2
    }
    run.end
  }

  /** A record start of the ordered `run` at or before its first record with time >= ms. */
  private def bisect(run: TimeRun, ms: Long): Long = {
    val seg = Segments.find(log.segments, run.start).get // runs are made of the records of a segment
    val stats = ScanStats()
    var low = run.start - seg.baseOffset
    var high = run.end - seg.baseOffset
    while (high - low > CommitLog.ProbeBytes) {
      val mid = (low + high) / 2
      val found = log.resync(seg, mid, high, stats)
      if (found < 0) high = mid
      else if (log.storeTimeAt(seg, found, stats) < ms) low = found
      else high = found
    }
    seg.baseOffset + low
  }
}

private[store] object Timeline {

  /** A segment with more runs than this is summarized as one unordered run. */
  final val MaxRuns = 256

  /** A seek walks forward through ranges of this size, doubling each time (after a bisection, the record
    * it looks for starts within `CommitLog.ProbeBytes`).
    */
  final val SeekFirstWindow: Long = 2L * CommitLog.ProbeBytes

  /** Summaries kept per JVM (least recently used dropped first). */
  final val CachedSegments = 1 << 16

  /** What tells a segment's records apart from any other (or the same file, rewritten or grown). */
  private final case class Identity(path: String, size: Long, modifiedMs: Long, recordsEnd: Long)

  private val summaries = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[Identity, IndexedSeq[TimeRun]](16, 0.75f, true) {
      override def removeEldestEntry(eldest: java.util.Map.Entry[Identity, IndexedSeq[TimeRun]]): Boolean =
        size > CachedSegments
    }
  )
}
