package io.rmqstore.spark.store

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode

import io.rmqstore.spark.format.Layout

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
  * end) and on disk outside the store where it has a `cache` identity (design §8), in the files of
  * python/rmqstore/store/timeline.py (`SegmentCache` kind `timeline`), so a new JVM, or the Python engine,
  * does not walk the segment again; the segment holding the valid end, when it has grown, is walked only
  * from where its summary ends.
  */
private[spark] final class Timeline(log: CommitLog, cache: Option[CacheIdentity]) {
  import Timeline._

  private var walked = IndexedSeq.empty[(Long, Long)]

  /** What summarizing read, when some summaries were not cached (None: none walked): a one-time cost per
    * segment the plan reports (python/rmqstore/store/timeline.py `Timeline.note`).
    */
  def note: Option[String] =
    if (walked.isEmpty) None
    else
      Some(
        s"summarized the store times of ${walked.size} commit-log segment(s), ${walked.map(w => w._2 - w._1).sum} " +
          "bytes, walked once: " + cache.fold("kept per JVM")(_ => s"cached in ${SegmentCache.root.resolve(CacheKind)}")
      )

  /** The runs of every segment holding records, in log order: kept in memory, else cached on disk, else
    * walked (and then cached).
    */
  lazy val runs: IndexedSeq[TimeRun] = {
    val live = log.segments.filter(_.baseOffset < log.end)
    val identities = live.map(seg => Identity(seg.path, seg.size, seg.modifiedMs, math.min(seg.endOffset, log.end)))
    val disk = cache.map(_.cache(CacheKind, CacheVersion, ""))
    lazy val stored = disk.fold(Map.empty[Long, IndexedSeq[JsonNode]])(_.load(live, log.end))
    val known = live.indices.map { i =>
      Option(summaries.get(identities(i))).orElse(stored.get(live(i).baseOffset).flatMap(fromEntry))
    }
    val all = live.indices.map(i => known(i).getOrElse(summarize(live(i), disk.flatMap(grown(_, live(i))))))
    walked = live.indices.filter(known(_).isEmpty).map(i =>
      (math.max(log.minOffset, live(i).baseOffset), math.min(live(i).endOffset, log.end))
    )
    live.indices.foreach(i => summaries.put(identities(i), all(i)))
    if (known.exists(_.isEmpty)) disk.foreach(_.save(live.indices.map(i => live(i) -> all(i).entry), log.end))
    all.flatMap(_.runs)
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

  /** The cached summary of `seg` from when it held the valid end, if the segment has only grown since: the
    * broker appends and never rewrites records before its valid end, so the cached runs still hold while the
    * record they end with is still there (python/rmqstore/store/timeline.py `_grown`).
    */
  private def grown(disk: SegmentCache, seg: Segment): Option[Summary] =
    disk.stale(seg).flatMap { case (key, entry) =>
      fromEntry(entry).filter { summary =>
        key(0).isIntegralNumber && key(0).asLong == seg.size && !key(2).isNull && summary.runs.nonEmpty &&
        math.min(seg.endOffset, log.end) >= summary.runs.last.end &&
        summary.last.exists(last => identityAt(seg, last(0)).contains(last)) && sameLastTime(seg, summary)
      }
    }

  /** The record `summary` ends with still has the last time of its run, when that run is ordered (the identity
    * does not hold the store time: a segment rewritten with other store times is walked again; timeline.py
    * `_same_last_time`).
    */
  private def sameLastTime(seg: Segment, summary: Summary): Boolean = {
    val run = summary.runs.last
    !run.ordered || log.storeTimeAt(seg, summary.last.get(0) - seg.baseOffset, ScanStats()) == run.lastMs
  }

  /** PHYSICALOFFSET, TOTALSIZE, BODYCRC and BORNTIMESTAMP of the record at physical offset `at` (one small read,
    * §2.2); None when it is not in `seg` (timeline.py `_identity`).
    */
  private def identityAt(seg: Segment, at: Long): Option[IndexedSeq[Long]] =
    if (!seg.contains(at)) None
    else {
      val head = log.readAt(seg, at - seg.baseOffset, Layout.OffBornHost, ScanStats())
      if (head.limit() < Layout.OffBornHost) None
      else
        Some(IndexedSeq(
          head.getLong(Layout.OffPhysicalOffset),
          head.getInt(Layout.OffTotalSize).toLong,
          head.getInt(Layout.OffBodyCrc).toLong,
          head.getLong(Layout.OffBornTimestamp)
        ))
    }

  /** The runs of one segment's records (class comment): only of those after the runs of `grown` (the cached
    * summary of a segment that has grown since), which they go on.
    */
  private def summarize(seg: Segment, grown: Option[Summary]): Summary = {
    val found = mutable.ArrayBuffer(grown.fold(IndexedSeq.empty[TimeRun])(_.runs): _*)
    var current: TimeRun = if (found.nonEmpty && found.last.ordered) found.remove(found.length - 1) else null
    var last: Option[IndexedSeq[Long]] = grown.flatMap(_.last)
    val start = grown.fold(seg.baseOffset)(_.runs.last.end)
    log.chunks(start, math.min(seg.endOffset, log.end), verifyCrc = false, permissive = true, ScanStats()) {
      v =>
        last = Some(IndexedSeq(v.physicalOffset, v.totalSize.toLong, v.bodyCrc.toLong, v.bornTimestampMs))
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
    val runs =
      if (found.length <= MaxRuns && found.forall(_.ordered)) found.toIndexedSeq
      else
        IndexedSeq(TimeRun(found.head.start, found.last.end, found.map(_.firstMs).min, found.map(_.lastMs).max, false))
    Summary(runs, last)
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

  /** The same files as python/rmqstore/store/timeline.py `_summaries` (docs/design.md §8.3). */
  final val CacheKind = ContractStore.TimelineCacheKind
  final val CacheVersion = ContractStore.TimelineCacheVersion

  /** The runs of one segment and what tells its last record from any other (PHYSICALOFFSET, TOTALSIZE, BODYCRC,
    * BORNTIMESTAMP: python/rmqstore/store/timeline.py `_identity`, which resumes a grown segment's walk after it).
    */
  final case class Summary(runs: IndexedSeq[TimeRun], last: Option[IndexedSeq[Long]]) {

    /** The cache entry: `[last or null, [start, end, firstMs, lastMs, ordered], ...]` (timeline.py `_Summary`). */
    def entry: Seq[Any] =
      last.orNull +: runs.map(r => Seq[Any](r.start, r.end, r.firstMs, r.lastMs, r.ordered))
  }

  /** A summary from its cached entry (`Summary.entry`), None when it is not that shape. */
  def fromEntry(entry: IndexedSeq[JsonNode]): Option[Summary] = {
    def longs(node: JsonNode, n: Int) =
      node.isArray && node.size == n && (0 until n).forall(node.get(_).isIntegralNumber)
    val runs = entry.drop(1)
    val fits = entry.nonEmpty && (entry(0).isNull || longs(entry(0), 4)) &&
      runs.forall(r => r.isArray && r.size == 5 && (0 until 4).forall(r.get(_).isIntegralNumber) && r.get(4).isBoolean)
    if (!fits) None
    else
      Some(Summary(
        runs.map(r => TimeRun(r.get(0).asLong, r.get(1).asLong, r.get(2).asLong, r.get(3).asLong, r.get(4).asBoolean)),
        Some(entry(0)).filter(!_.isNull).map(_.elements.asScala.map(_.asLong).toIndexedSeq)
      ))
  }

  /** What tells a segment's records apart from any other (or the same file, rewritten or grown). */
  private final case class Identity(path: String, size: Long, modifiedMs: Long, recordsEnd: Long)

  private val summaries = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[Identity, Summary](16, 0.75f, true) {
      override def removeEldestEntry(eldest: java.util.Map.Entry[Identity, Summary]): Boolean =
        size > CachedSegments
    }
  )
}
