package io.rmqstore.spark.store

import java.nio.charset.StandardCharsets.UTF_8
import java.security.MessageDigest

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import io.rmqstore.spark.format.Layout

/** The uncovered byte ranges of one segment, in log order (empty: every record has a unit), the parts of
  * them an index lookup cannot find (ROLLBACK records, bytes holding no valid record) and the topics of
  * the indexed records in them, sorted.
  */
final case class SegmentVerdict(
    gaps: IndexedSeq[(Long, Long)],
    unindexed: IndexedSeq[(Long, Long)],
    topics: IndexedSeq[String]
)

/** Which commit-log bytes hold records that no consume-queue unit points to (design §3.2, spec §4.1): the
  * rule of python/rmqstore/store/coverage.py.
  *
  * A consume queue only gets units for transaction type NOT / COMMIT records (§4.1): PREPARED and
  * ROLLBACK records, records not dispatched yet (queues lag behind the log after a crash) and records of
  * a topic whose `consumequeue/<topic>` is gone are in no queue. Per segment, records are contiguous from
  * its first byte up to the valid end (the segment holding it) or a BLANK (a sealed segment, §2.6), and
  * every unit points at a whole record, so the records without a unit are exactly the holes between the
  * units pointing into the segment (all queues), before the first and after the last one (unless a BLANK
  * starts there). Units that overlap or point past the records leave the whole segment uncovered.
  *
  * The index has every record of a gap but ROLLBACK-typed ones (§5.4: the broker dispatches each record to
  * the queues and the index in log order), so a verdict also keeps the `unindexed` parts of its gaps
  * (ROLLBACK records and bytes holding no valid record) and the topics of the gaps' indexed records (a
  * topic of PREPARED records only has no queue, yet is in the index).
  *
  * Verdicts are cached in memory per JVM by segment identity (path, size, last-modified time, where its
  * records end) and the set of queues, and on disk outside the store (`CacheIdentity`) in the files of
  * python/rmqstore/store/coverage.py (`SegmentCache` kind `coverage`, salted with the sha256 of the JSON list
  * of queue names), so a new JVM, or the Python engine, does not read every consume queue again. While those
  * are the same, queues can only gain units, so a cached gap may since have been filled: it is scanned for
  * nothing, never a record missed.
  */
/** The verdicts of one store (design §3.2): its `log` against its `queues`, cached where the store has a
  * `cache` identity (design §8). A service of the store facade (docs/design.md §1).
  */
private[spark] final class Coverage(log: CommitLog, queues: Queues, cache: Option[CacheIdentity]) {

  private var decided = 0
  private var queueCount = 0

  private lazy val verdicts: IndexedSeq[SegmentVerdict] = {
    val named = for (t <- queues.topics; q <- queues.queueIds(t)) yield (s"$t/$q", () => queues.queue(t, q))
    val (all, fresh) =
      Coverage.verdicts(log, named, digest => cache.map(_.cache(Coverage.CacheKind, Coverage.CacheVersion, digest)))
    decided = fresh
    queueCount = named.size
    all
  }

  /** What deciding the verdicts read, when some were not cached (None: all came from the cache): a one-time
    * cost per segment the plan reports (python/rmqstore/store/coverage.py `segment_verdicts`).
    */
  def note: Option[String] =
    if (decided <= 0) None
    else
      Some(
        s"decided which bytes of $decided commit-log segment(s) no consume queue covers, from the units of " +
          s"$queueCount queue(s) and a scan of the uncovered bytes, once: " +
          cache.fold("kept per Store")(_ => s"cached in ${SegmentCache.root.resolve(Coverage.CacheKind)}")
      )

  /** Commit-log byte ranges [start, end) that may hold records no consume-queue unit points to: transaction
    * PREPARED / ROLLBACK records (§4.1), records the queues have not caught up with and records of topics
    * without a queue directory; everything else is found through the queues.
    */
  def uncoveredRanges: IndexedSeq[(Long, Long)] = verdicts.flatMap(_.gaps)

  /** The parts of `uncoveredRanges` that key and uniqKey lookups cannot find through the index: ROLLBACK
    * records (the only type the broker does not index, §5.4) and bytes holding no valid record.
    */
  def unindexedRanges: IndexedSeq[(Long, Long)] = verdicts.flatMap(_.unindexed)

  /** The parts of `uncoveredRanges` that may hold a record of one of `topics`: every gap of a segment whose gaps'
    * indexed records include one of them, and elsewhere only the `unindexed` parts (ROLLBACK records and bytes
    * holding no valid record, whose topics a verdict does not keep). A `topic =` plan scans these (design §3.2), not
    * every gap of the log (python/rmqstore/store/coverage.py `uncovered_ranges_of`).
    */
  def uncoveredRangesOf(topics: Set[String]): IndexedSeq[(Long, Long)] =
    verdicts.flatMap(v => if (v.topics.exists(topics)) v.gaps else v.unindexed)

  /** Every topic that can have records in the index, sorted: the queues' topics and those of the indexed
    * records in `uncoveredRanges` (a topic of transaction PREPARED records only has no queue directory, §5.4).
    */
  def indexedTopics: Seq[String] = (queues.topics ++ verdicts.flatMap(_.topics)).distinct.sorted
}

private[store] object Coverage {

  /** The same files as python/rmqstore/store/coverage.py `segment_verdicts` (docs/design.md §8.3). */
  final val CacheKind = ContractStore.CoverageCacheKind
  final val CacheVersion = ContractStore.CoverageCacheVersion

  /** Verdicts kept per JVM (least recently used dropped first). */
  final val CachedSegments = 1 << 16

  private final case class Identity(path: String, size: Long, modifiedMs: Long, recordsEnd: Long, queues: String)

  private val verdictCache = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[Identity, SegmentVerdict](16, 0.75f, true) {
      override def removeEldestEntry(eldest: java.util.Map.Entry[Identity, SegmentVerdict]): Boolean =
        size > CachedSegments
    }
  )

  /** A verdict for every segment holding records (base offset below the valid end), in log order, and how
    * many of them were decided again (not cached).
    * `queues`: every consume queue of the store, named "topic/queueId", opened (its files listed and read) only
    * when a verdict is decided again; `diskCache`: the store's cache of
    * kind `CacheKind` salted with the given digest of the queue names (None where there is none, `CacheIdentity.of`).
    */
  def verdicts(
      log: CommitLog,
      queues: Seq[(String, () => QueueReader)],
      diskCache: String => Option[SegmentCache]
  ): (IndexedSeq[SegmentVerdict], Int) = {
    val live = log.segments.filter(_.baseOffset < log.end)
    if (live.isEmpty) return (IndexedSeq.empty, 0)
    val digest = queuesDigest(queues.map(_._1).sorted)
    val disk = diskCache(digest)
    val identities =
      live.map(seg => Identity(seg.path, seg.size, seg.modifiedMs, math.min(seg.endOffset, log.end), digest))
    lazy val stored = disk.fold(Map.empty[Long, IndexedSeq[com.fasterxml.jackson.databind.JsonNode]])(
      _.load(live, log.end)
    )
    val known = live.indices.map { i =>
      Option(verdictCache.get(identities(i))).orElse(stored.get(live(i).baseOffset).flatMap(fromEntry))
    }
    val missing = live.indices.filter(i => known(i).isEmpty)
    val fresh = if (missing.isEmpty) IndexedSeq.empty else compute(log, missing.map(live), queues.map(_._2()))
    val byIndex = missing.zip(fresh).toMap
    val all = live.indices.map(i => known(i).getOrElse(byIndex(i)))
    live.indices.foreach(i => verdictCache.put(identities(i), all(i)))
    if (fresh.nonEmpty)
      disk.foreach(_.save(live.indices.map(i => live(i) -> Seq(all(i).gaps, all(i).unindexed, all(i).topics)), log.end))
    (all, fresh.size)
  }

  /** A verdict from its cached entry (`[gaps, unindexed, topics]`), None when it is not that shape. */
  private def fromEntry(entry: IndexedSeq[com.fasterxml.jackson.databind.JsonNode]): Option[SegmentVerdict] =
    if (entry.size < 3 || !entry(2).isArray || !entry(2).elements.asScala.forall(_.isTextual)) None
    else
      for {
        gaps <- SegmentCache.ranges(entry(0))
        unindexed <- SegmentCache.ranges(entry(1))
      } yield SegmentVerdict(gaps, unindexed, entry(2).elements.asScala.map(_.asText).toIndexedSeq)

  /** coverage.py's salt: the sha256 (hex) of the JSON list of queue names, sorted. */
  private def queuesDigest(names: Seq[String]): String =
    MessageDigest.getInstance("SHA-256").digest(CacheIdentity.pythonJson(names).getBytes(UTF_8))
      .map(b => f"$b%02x").mkString

  /** Verdicts for `segments` (in log order, at least one) from the units of every queue. */
  private def compute(
      log: CommitLog,
      segments: IndexedSeq[Segment],
      queues: Seq[QueueReader]
  ): IndexedSeq[SegmentVerdict] = {
    // per segment: (position << 31) | size of each unit pointing into it (positions and sizes are Java ints)
    val packed = Array.fill(segments.length)(mutable.ArrayBuilder.make[Long])
    val first = segments.head.baseOffset
    val numbered = segments.map(_.baseOffset).zipWithIndex.toMap
    for (queue <- queues; u <- queue.unitsFrom(first)) {
      Segments.find(segments, u.phyOffset).foreach { seg =>
        packed(numbered(seg.baseOffset)) += ((u.phyOffset - seg.baseOffset) << 31) | u.size.toLong
      }
    }
    segments.indices.map { i =>
      val units = packed(i).result()
      java.util.Arrays.sort(units)
      val gaps = holes(log, segments(i), units)
      val (unindexed, topics) = unindexedOf(log, gaps)
      SegmentVerdict(gaps, unindexed, topics)
    }
  }

  /** The byte ranges of `seg` no unit covers, from its units (sorted `position << 31 | size`). In a DLedger log
    * (§2.13) a record's entry header (`lead` bytes) before it belongs to it.
    */
  private def holes(log: CommitLog, seg: Segment, units: Array[Long]): IndexedSeq[(Long, Long)] = {
    val lead = log.lead
    val holdingEnd = seg.contains(log.end)
    val recordsEnd = if (holdingEnd) log.end - seg.baseOffset else seg.size
    val out = mutable.ArrayBuffer.empty[(Long, Long)]
    var covered = 0L // end of the units so far
    var i = 0
    while (i < units.length) {
      val (start, size) = (units(i) >>> 31, units(i) & 0x7fffffffL)
      if (i > 0 && units(i) == units(i - 1)) () // a record in several queues counts once
      else if (start - lead < covered || start + size > recordsEnd)
        return IndexedSeq((seg.baseOffset, seg.baseOffset + recordsEnd))
      else {
        if (start - lead > covered) out += ((seg.baseOffset + covered, seg.baseOffset + start - lead))
        covered = start + size
      }
      i += 1
    }
    val tailEnd = if (!holdingEnd && blankAt(log, seg, covered)) covered else recordsEnd
    if (covered < tailEnd) out += ((seg.baseOffset + covered, seg.baseOffset + tailEnd))
    out.toIndexedSeq
  }

  /** A BLANK (§2.6) filling the segment from `pos`, or a DLedger blank (§2.13). */
  private def blankAt(log: CommitLog, seg: Segment, pos: Long): Boolean =
    if (log.lead > 0) log.recordAt(seg, pos + log.lead, verifyCrc = false, ScanStats())._2 ==
      io.rmqstore.spark.format.RecordCheck.Blank
    else pos + Layout.EndFileMinBlankLength <= seg.size && {
      val head = log.readAt(seg, pos, Layout.EndFileMinBlankLength, ScanStats())
      head.limit() >= Layout.EndFileMinBlankLength && head.getInt(4) == Layout.BlankMagic &&
      head.getInt(0).toLong == seg.size - pos
    }

  /** The bytes of `gaps` outside every valid record the index has (all but ROLLBACK-typed, §5.4), and the
    * topics of those indexed records.
    */
  private def unindexedOf(
      log: CommitLog,
      gaps: IndexedSeq[(Long, Long)]
  ): (IndexedSeq[(Long, Long)], IndexedSeq[String]) = {
    if (gaps.isEmpty) return (IndexedSeq.empty, IndexedSeq.empty)
    val indexed = mutable.ArrayBuffer.empty[(Long, Long)]
    val topics = mutable.SortedSet.empty[String]
    log.rangeChunks(gaps, verifyCrc = false, permissive = true, ScanStats()) { v =>
      if ((v.sysFlag & Layout.SysFlagTransactionMask) != Layout.TransactionRollback) {
        indexed += ((v.physicalOffset, v.physicalOffset + v.totalSize))
        topics += v.topic
      }
      true
    }
    (Ranges.subtract(gaps, indexed.toIndexedSeq), topics.toIndexedSeq)
  }
}
