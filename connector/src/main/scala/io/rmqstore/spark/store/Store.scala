package io.rmqstore.spark.store

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration

import io.rmqstore.spark.format.{
  BrokerConfig,
  Compression,
  ConsumeQueueUnit,
  DLedgerEntry,
  JavaHash,
  Layout,
  RecordCheck,
  RecordView
}
import io.rmqstore.spark.io.{RandomAccess, StoreFileSystem}

/** Where a store lives: a local path or a Hadoop URI (serializable, cheap to ship to executors). */
final case class StoreLocation(path: String)

/** One RocketMQ broker store, opened read-only (design §4.1), like python/rmqstore/store/store.py.
  *
  * Never writes, locks, truncates or recovers anything. Offsets are physical commit-log offsets unless
  * named queue offsets. Callbacks get one reused `RecordView`, valid only during the call. Not thread-safe:
  * one Store per task.
  */
final class Store private (
    val location: StoreLocation,
    fs: StoreFileSystem,
    val root: String,
    indexGeometry: Option[(Int, Int)],
    knownEnd: Option[Long],
    checkCrcAtEnd: Boolean,
    val maxMessageSize: Int
) extends AutoCloseable {
  import Store._

  if (!fs.isDir(root)) throw new StoreLayoutException(s"${location.path}: no such store directory")
  // `commitlog/`, or the data directory of a DLedger log (§2.13) whose records follow a 48-byte entry header
  private val (commitlogDir, lead) = Shape.dledgerDirs(fs, root) match {
    case Seq() => (fs.join(root, CommitlogDir), 0)
    case Seq(data) =>
      val replaced = fs.join(root, CommitlogDir)
      if (fs.isDir(replaced) && fs.list(replaced).nonEmpty)
        throw new UnsupportedShapeException(
          location.path,
          Feature(Shape.Dledger, s"$data and $replaced"),
          s"reading it with the $CommitlogDir/ it replaced"
        )
      (data, DLedgerEntry.Header)
    case several =>
      throw new StoreLayoutException(s"${location.path}: DLedger logs of several members (${several.mkString(", ")})")
  }

  /** Bytes of entry framing before each record: 0, or a DLedger log's 48-byte entry header (§2.13). */
  def recordLead: Int = lead

  if (!fs.isDir(commitlogDir))
    throw new StoreLayoutException(
      s"${location.path}: commit-log directory $commitlogDir does not exist (a store root holds $CommitlogDir/)"
    )
  private val (segmentList, layoutProblems) = Segments.list(fs, commitlogDir)
  private val index = new IndexFiles(fs, fs.join(root, IndexFiles.IndexDir), indexGeometry)
  private val log =
    new CommitLog(
      fs,
      segmentList,
      checkCrcAtEnd,
      knownEnd,
      maxMessageSize,
      () => index.newestEndPhyOffset,
      () => crashMinTimestamp,
      lead
    )
  private val queues = mutable.HashMap.empty[(String, Int), QueueReader]
  private val otherProblems = mutable.ArrayBuffer.empty[String]

  /** Every commit-log segment file, pre-allocated ones included, by base offset. */
  def segments: IndexedSeq[Segment] = log.segments

  /** First byte of the first segment. */
  def minOffset: Long = log.minOffset

  /** The valid end of the log (recovery rules, §2.12); see `logEndReason` for why it is there. */
  def logEnd: Long = log.end

  def logEndReason: String = log.endExplanation

  /** The size most commit-log segments have (`mapedFileSizeCommitLog`), 0 without segments. */
  def segmentSize: Long = Segments.commonSize(segments)

  /** True when `abort` exists: a broker is running, or did not shut down cleanly (§6.2). */
  def abortPresent: Boolean = fs.info(fs.join(root, AbortFile)).isDefined

  /** getMinTimestamp() of the checkpoint when `abort` exists, else None: where abnormal recovery starts (§6.1,
    * §6.3). 0 (recovery from the first segment) without a readable checkpoint.
    */
  private def crashMinTimestamp: Option[Long] =
    if (!abortPresent) None
    else {
      val path = fs.join(root, CheckpointFile)
      val bytes = if (fs.info(path).exists(!_.isDir)) fs.readAll(path) else Array.emptyByteArray
      if (bytes.length < 16) Some(0L)
      else {
        val buf = ByteBuffer.wrap(bytes)
        Some(math.max(0L, math.min(buf.getLong(0), buf.getLong(8)) - CheckpointMarginMs))
      }
    }

  /** A commit-log segment opened for positioned reads (`mapped`: memory-mapped, for files no longer written). */
  private[store] def openSegment(seg: Segment, mapped: Boolean): RandomAccess = fs.open(seg.path, mapped)

  /** Everything odd found so far: layout, bad topic names, unusable index files. */
  def problems: Seq[String] = layoutProblems ++ otherProblems ++ index.problems

  /** Walk the records whose commitLogOffset is in [start, end) ∩ [minOffset, logEnd), in log order.
    *
    * `start` may be any byte: the first record start at or after it is found by resync, so ranges
    * that tile the log yield every record exactly once. An invalid record, or a body `f` cannot
    * decompress (BodyDecompressionException from `RecordView.body`, thrown before `f` writes
    * anything of the record), raises StoreCorruptionException naming file and physical offset
    * (FAILFAST) or is counted in the stats and stepped over (PERMISSIVE: reading resumes at the next
    * valid record start; the bad body's record is left out).
    */
  def scan(start: Long, end: Long, verifyCrc: Boolean, permissive: Boolean)(f: RecordView => Unit): ScanStats = {
    val stats = ScanStats()
    log.chunks(start, end, verifyCrc, permissive, stats) { v => f(v); true }
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
    val end = logEnd
    val from = math.max(offset, minOffset)
    val starts = segments.iterator.filter(seg => seg.endOffset > from && seg.baseOffset < end).map { seg =>
      val pos = math.max(from - seg.baseOffset, 0L)
      val hi = math.min(end, seg.endOffset) - seg.baseOffset
      val found = if (pos <= lead) lead.toLong else log.resync(seg, pos, hi, stats)
      val isRecord =
        found >= 0 && found < hi && log.recordAt(seg, found, verifyCrc = false, stats, log.isSealed(seg))._2 > 0
      if (isRecord) seg.baseOffset + found else -1L
    }
    starts.find(_ >= 0).getOrElse(end)
  }

  /** Each segment's part of [minOffset, logEnd), in log order, empty parts left out (python/rmqstore/store/store.py
    * `segment_spans`): a range owns the records starting in it; `plan.Split.splitSpans` cuts spans into tasks.
    */
  def segmentSpans: IndexedSeq[(Long, Long)] = {
    val end = logEnd
    segments.map(seg => (math.max(minOffset, seg.baseOffset), math.min(end, seg.endOffset))).filter(s => s._1 < s._2)
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
    val end = logEnd
    val wanted = offsets.filter(o => o >= minOffset && o < end).distinct.sorted
    val view = new RecordView()
    view.maxBodySize = maxMessageSize
    val runs = mutable.ArrayBuffer.empty[(Segment, Array[Long])]
    var i = 0
    while (i < wanted.length) {
      Segments.find(segments, wanted(i)) match {
        case None => i += 1
        case Some(seg) =>
          var j = i + 1
          while (j < wanted.length && wanted(j) < seg.endOffset && wanted(j) - wanted(j - 1) < ReadRunGap) j += 1
          runs += ((seg, wanted.slice(i, j)))
          i = j
      }
    }
    // The first reads of consecutive runs of one segment, up to ReadBatchBytes, are one batch (`readRanges`:
    // a remote file fetches them concurrently, a mapped one hands out slices).
    var k = 0
    while (k < runs.length) {
      val seg = runs(k)._1
      var end = k + 1
      var bytes = firstRead(seg, runs(k)._2)._2.toLong
      while (end < runs.length && (runs(end)._1 eq seg) && bytes + firstRead(seg, runs(end)._2)._2 <= ReadBatchBytes) {
        bytes += firstRead(seg, runs(end)._2)._2
        end += 1
      }
      val batch = runs.slice(k, end)
      val buffers = log.readRanges(seg, batch.map(r => firstRead(seg, r._2)).toSeq, stats, log.isSealed(seg))
      for (((_, run), buf) <- batch.zip(buffers)) readRun(seg, run, buf, verifyCrc, permissive, strict, stats, view, f)
      k = end
    }
    stats
  }

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
    val finished = log.isSealed(seg)
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

  // ---- index ----------------------------------------------------------------------------------

  /** Index files oldest first, each with its geometry, header and problem. */
  def indexFiles: Seq[IndexFileInfo] = index.infos

  /** endPhyOffset of the newest index file with entries: records after it are not indexed yet. */
  def indexedEnd: Long = index.indexedEnd

  /** Hash candidates for `topic#key` in every index file (§5.6), sorted and distinct; unconfirmed (check
    * topic, KEYS/UNIQ_KEY and store time on the record). Records after `indexedEnd` and ROLLBACK records
    * are not indexed. Throws IndexUnavailableException when an index file is unusable (scan instead).
    */
  def indexCandidates(topic: String, key: String): Array[Long] = {
    val bad = index.problems
    if (bad.nonEmpty) throw new IndexUnavailableException("index files unusable: " + bad.mkString("; "))
    index.candidates(topic, key)
  }

  /** IndexUnavailableException when the index cannot answer a lookup completely: an index file is unusable,
    * or the index lacks more than `ContractStore.IndexTailScanLimit` bytes besides ROLLBACK records (records past its end
    * or of lost index files, `SideIndex.indexHoles`; e.g. no index at all): scan instead
    * (python/rmqstore/store/store.py `side_index`).
    */
  def checkIndexAnswers(): Unit = {
    val bad = index.problems
    if (bad.nonEmpty) throw new IndexUnavailableException("index files unusable: " + bad.mkString("; "))
    val holes = indexHoles
    val lacking = holes.map { case (a, b) => b - a }.sum
    if (lacking > ContractStore.IndexTailScanLimit)
      throw new IndexUnavailableException(
        s"the index lacks $lacking bytes of the log in ${holes.size} range(s) from physical offset " +
          s"${holes.head._1} (records past its end or of lost index files; limit ${ContractStore.IndexTailScanLimit}): scan instead"
      )
  }

  /** The parts of [minOffset, logEnd) outside every usable index file's span: records past the newest
    * file's end or of lost files, sorted and disjoint (`SideIndex.indexHoles`).
    */
  lazy val indexHoles: IndexedSeq[(Long, Long)] = SideIndex.indexHoles(this)

  /** The commit-log ranges whose records may be missing from the broker's index, sorted and disjoint:
    * `unindexedRanges` (ROLLBACK records), the log past the index's end and the records of lost index files
    * (`SideIndex.lackingRanges`).
    */
  def lackingRanges: IndexedSeq[(Long, Long)] = SideIndex.lackingRanges(this)

  private var side: SideIndexParts = _

  /** The side index of `lacking` (`lackingRanges`, here or on the driver), opened once per Store: from the
    * cache directory where it holds, else built from a scan of only those ranges (counted in `lookupStats`)
    * and cached; its `note` says when it was built (`SideIndex`).
    */
  def sideIndex(lacking: Seq[(Long, Long)]): SideIndexParts = {
    if (side == null) side = SideIndex.open(this, lacking)
    side
  }

  /** Commit-log bytes and records read by key lookups through this Store besides the records they return:
    * side index builds and the index headers' last records (`bytesRead` of the planning or probing task).
    */
  val lookupStats: ScanStats = ScanStats()

  /** Offsets of the records that may have one of `keys` as a KEYS token or UNIQ_KEY in one of `topics`,
    * sorted and distinct, unconfirmed: the hash candidates of `topic#key` (§5.6) in the index files and in
    * the side index of `lacking` (`sideIndex`). Raises IndexUnavailableException as `checkIndexAnswers`.
    */
  def indexLookup(topics: Seq[String], keys: Seq[String], lacking: Seq[(Long, Long)]): Array[Long] = {
    checkIndexAnswers()
    val extra = sideIndex(lacking)
    val found = mutable.ArrayBuilder.make[Long]
    val probes = for (topic <- topics; key <- keys) yield (topic, key)
    index.prefetch(probes)
    for ((topic, key) <- probes) {
      found ++= index.candidates(topic, key)
      found ++= extra.candidates(topic, key)
    }
    found.result().distinct.sorted
  }

  /** The topics a key lookup without a topic predicate probes, sorted: `indexedTopics` and the topics of
    * the side index's records.
    */
  def keyTopics(side: SideIndexParts): Seq[String] = (indexedTopics ++ side.topics).distinct.sorted

  /** The cache of `kind` in the cache directory (`SegmentCache`): a local store's, or a remote one's whose
    * listing gives every segment a modification time (None otherwise).
    */
  private[store] def diskCache(kind: String, version: Int, salt: String): Option[SegmentCache] =
    if (fs.isInstanceOf[io.rmqstore.spark.io.LocalFileSystem])
      Some(SegmentCache.forLocalStore(root, commitlogDir, kind, version, salt))
    else if (segments.forall(_.modifiedMs > 0))
      Some(SegmentCache.forRemoteStore(location.path, commitlogDir, kind, version, salt))
    else None

  private[store] def commitLog: CommitLog = log

  /** Index probes made through this Store so far by `indexLookup` and `indexCandidates` (`IndexFiles.probes`):
    * topics x keys x usable index files with entries per lookup; the scan's `indexProbes` metric.
    */
  def indexProbes: Long = index.probes

  // ---- consume queues -------------------------------------------------------------------------

  private def consumequeueDir: String = fs.join(root, ConsumequeueDir)

  /** The RocketMQ features this store's files show (§1.6, `Shape`). */
  lazy val shape: Shape = Shape.detect(
    fs,
    root,
    try configDocument(TopicsFile)
    catch { case _: StoreException => None }
  )

  /** Topics with a directory under `batchconsumequeue/` (§4.5): their queues are read there. */
  private lazy val batchTopics: Set[String] =
    fs.list(fs.join(root, BatchConsumequeueDir)).filter(_.isDir).map(_.name).toSet

  /** The directory holding `topic`'s queues: `batchconsumequeue/` for a BatchCQ topic (§4.5). */
  private def queuesDir(topic: String): String =
    fs.join(root, if (batchTopics(topic)) BatchConsumequeueDir else ConsumequeueDir, Segments.checkTopicDirName(topic))

  /** Topics with a consume-queue directory or an entry in topics.json, sorted; names that cannot be a
    * directory inside the store are left out and reported in `problems`.
    */
  def topics: Seq[String] = {
    val queueTopics = rocksQueues.fold(fs.list(consumequeueDir).filter(_.isDir).map(_.name).toSet)(_.topics)
    val names = batchTopics ++ queueTopics ++
      configDocument(TopicsFile).map(BrokerConfig.topicNames).getOrElse(Nil)
    names.toSeq.sorted.filter { name =>
      Segments.topicDirProblem(name) match {
        case None => true
        case Some(p) =>
          val note = s"topic '$name' skipped: $p"
          if (!otherProblems.contains(note)) otherProblems += note
          false
      }
    }
  }

  /** Queue ids that have a directory under `consumequeue/<topic>/` (`batchconsumequeue/`, §4.5), sorted, or
    * the queues of a RocksDB consume queue (§4.7).
    */
  def queueIds(topic: String): Seq[Int] = {
    val dir = queuesDir(topic) // checks the name
    rocksQueues.fold(
      fs.list(dir)
        .filter(e => e.isDir && e.name.nonEmpty && e.name.forall(c => c >= '0' && c <= '9'))
        .flatMap(e => e.name.toIntOption)
        .sorted
    )(_.queueIds(topic))
  }

  /** The queues of a RocksDB `consumequeue/` (§4.7, `storeType=defaultRocksDB`); None for queue files. */
  private lazy val rocksQueues: Option[RocksConsumeQueues] = {
    // `consumequeue/`, or `consumequeue_rocksdb/` (useSeparateStorePathForRocksdbCQ) without queue files
    val separate = fs.join(root, RocksDbConsumequeueDir)
    val path =
      if (RocksDb.isRocksDb(fs, consumequeueDir)) Some(consumequeueDir)
      else if (RocksDb.isRocksDb(fs, separate) && !fs.list(consumequeueDir).exists(_.isDir)) Some(separate)
      else None
    path.map { p =>
      val db = RocksDb.openLocal(fs, p, "the consume queue (storeType=defaultRocksDB)")
      openedRocksDb = Some(db)
      new RocksConsumeQueues(db)
    }
  }
  private var openedRocksDb: Option[RocksDb] = None

  private def queue(topic: String, queueId: Int): QueueReader = {
    Segments.checkTopicDirName(topic)
    if (queueId < 0) throw new IllegalArgumentException(s"queue id must be >= 0, got $queueId")
    queues.getOrElseUpdate(
      (topic, queueId),
      rocksQueues match {
        case Some(rocks) => rocks.queue(topic, queueId, minOffset, logEnd)
        case None =>
          val (segs, found) = Segments.list(fs, fs.join(queuesDir(topic), queueId.toString))
          otherProblems ++= found
          if (batchTopics(topic)) new BatchConsumeQueue(fs, segs, minOffset, logEnd)
          else new ConsumeQueue(fs, segs, minOffset, logEnd)
      }
    )
  }

  /** The first queue offset of the unit of (topic, queueId) holding `offset`: a committed offset inside a
    * BatchCQ batch starts with that batch, as getMessage returns it (§4.5).
    */
  def queueFloor(topic: String, queueId: Int, offset: Long): Long = queue(topic, queueId).floor(offset)

  /** (min, max) queue offsets of (topic, queueId): fillers and units outside the log skipped (§4.3). */
  def queueRange(topic: String, queueId: Int): (Long, Long) = {
    val q = queue(topic, queueId)
    (q.minOffset, q.maxOffset)
  }

  /** PHYSICALOFFSET of the last unit of (topic, queueId), units past the log's valid end included. */
  def queueLastPhy(topic: String, queueId: Int): Option[Long] = queue(topic, queueId).lastPhyOffset

  /** Units with queue offset in [fromQueueOffset, toQueueOffset) ∩ `queueRange`:
    * (queueOffset, physical offset, size, tagsCode).
    */
  def queueUnits(
      topic: String,
      queueId: Int,
      fromQueueOffset: Long,
      toQueueOffset: Long
  ): Iterator[(Long, Long, Int, Long)] =
    queue(topic, queueId).units(fromQueueOffset, toQueueOffset).map(u =>
      (u.queueOffset, u.phyOffset, u.size, u.tagsCode)
    )

  /** Queue offsets [start, end) of (topic, queueId) that lie in the queue's files, as runs in order: planning
    * splits these, never the offsets between files (python/rmqstore/store/consumequeue.py `spans`).
    */
  def queueSpans(topic: String, queueId: Int, start: Long, end: Long): Seq[(Long, Long)] =
    queue(topic, queueId).spans(start, end)

  /** Physical offsets of the units with queue offset in [start, end) ∩ `queueRange`, in queue order; with
    * `tags`, only units whose tagsCode may belong to one of them (hashes collide: confirm TAGS on the
    * record). A tagsCode that is not a tag hash is kept: ConsumeQueueExt addresses (§4.4) and every unit of
    * SCHEDULE_TOPIC_XXXX (a delivery time, §4.2).
    */
  def queueOffsets(topic: String, queueId: Int, start: Long, end: Long, tags: Option[Seq[String]]): Iterator[Long] =
    selectedUnits(topic, queueId, start, end, tags).map(_.phyOffset)

  /** The units `queueOffsets` keeps (queue offset, physical offset, size): what a plan reading them selects. */
  def queueSelection(
      topic: String,
      queueId: Int,
      start: Long,
      end: Long,
      tags: Option[Seq[String]]
  ): Iterator[QueueUnit] =
    selectedUnits(topic, queueId, start, end, tags)

  private def selectedUnits(topic: String, queueId: Int, start: Long, end: Long, tags: Option[Seq[String]]) = {
    val units = queue(topic, queueId).sliceUnits(start, end)
    val codes = tags.map(_.map(JavaHash.tagsCode).toSet)
    codes match {
      case Some(c) if topic != Layout.ScheduleTopic =>
        units.filter(u => c.contains(u.tagsCode) || ConsumeQueueUnit.isExtAddress(u.tagsCode))
      case _ => units
    }
  }

  // ---- coverage -------------------------------------------------------------------------------

  private lazy val coverage: IndexedSeq[SegmentVerdict] =
    Coverage.verdicts(
      log,
      for (t <- topics; q <- queueIds(t)) yield (s"$t/$q", queue(t, q)),
      digest => diskCache(Coverage.CacheKind, Coverage.CacheVersion, digest)
    )

  /** Commit-log byte ranges [start, end) that may hold records no consume-queue unit points to: transaction
    * PREPARED / ROLLBACK records (§4.1), records the queues have not caught up with and records of topics
    * without a queue directory; everything else is found through the queues (`Coverage`, cached per JVM
    * and, for a local store, in the cache directory).
    */
  def uncoveredRanges: IndexedSeq[(Long, Long)] = coverage.flatMap(_.gaps)

  /** The parts of `uncoveredRanges` that key and uniqKey lookups cannot find through the index: ROLLBACK
    * records (the only type the broker does not index, §5.4) and bytes holding no valid record.
    */
  def unindexedRanges: IndexedSeq[(Long, Long)] = coverage.flatMap(_.unindexed)

  /** Every topic that can have records in the index, sorted: `topics` and those of the indexed records in
    * `uncoveredRanges` (a topic of transaction PREPARED records only has no queue directory, §5.4).
    */
  def indexedTopics: Seq[String] = (topics ++ coverage.flatMap(_.topics)).distinct.sorted

  // ---- time -----------------------------------------------------------------------------------

  private lazy val timeline = new Timeline(log)

  /** The store times of the log summarized per segment as runs, in log order (see `seekTime`). */
  def timeRuns: IndexedSeq[TimeRun] = timeline.runs

  /** Physical offset of the first record (log order) with storeTimestamp >= ms (`logEnd` if none).
    *
    * Exact also when the broker's clock stepped back, by any amount: the log's store times are summarized
    * per segment (`Timeline`: one walk of the record headers per segment, cached in memory per JVM), then
    * bisected.
    */
  def seekTime(ms: Long): Long = timeline.firstAtOrAfter(ms)

  /** Commit-log byte ranges [start, end), in log order, holding every record with beginMs <=
    * storeTimestamp <= endMs (inclusive; Long.MinValue / Long.MaxValue: unbounded), and few others: one
    * range unless the broker's clock stepped back (see `seekTime`).
    */
  def timeRanges(beginMs: Long, endMs: Long): Seq[(Long, Long)] = timeline.ranges(beginMs, endMs)

  // ---- metadata -------------------------------------------------------------------------------

  /** Where the broker's consumer offsets are: the RocksDB `config/consumerOffsets/` (§4.8) when there is one. */
  private def consumerOffsetsSource: String = {
    val rocks = fs.join(root, ConfigDir, ConsumerOffsetsRocksDb)
    if (RocksDb.isRocksDb(fs, rocks)) rocks else fs.join(root, ConfigDir, ConsumerOffsetFile)
  }

  /** (topic, group) -> {queueId: next queue offset} from config/consumerOffset.json (.bak fallback), or in RocksDB
    * metadata mode from `config/consumerOffsets/` unless the JSON's dataVersion counter is higher (§4.8,
    * `RocksDBConsumerOffsetManager.merge`).
    */
  def consumerOffsets: Map[(String, String), Map[Int, Long]] = {
    val rdb = fs.join(root, ConfigDir, ConfigStorageRocksDb) // v2 config storage: refused (§4.8), not a stale JSON
    if (RocksDb.isRocksDb(fs, rdb))
      throw new UnsupportedShapeException(rdb, Feature(Shape.RocksdbOffsets, "config/rdb/"), "reading consumer offsets")
    val json = configDocument(ConsumerOffsetFile)
    val source = consumerOffsetsSource
    val doc =
      if (!source.endsWith(ConsumerOffsetsRocksDb)) json
      else {
        val (counter, table) = RocksConsumerOffsets.read(fs, source)
        json.filter(RocksConsumerOffsets.counter(_) > counter).orElse(Some(table))
      }
    doc.map { d =>
      try BrokerConfig.consumerOffsets(d)
      catch { case e: IllegalArgumentException => throw new StoreCorruptionException(source, 0, e.getMessage) }
    }.getOrElse(Map.empty)
  }

  /** topic -> {queueId: next queue offset} that consumer `group` committed (consumerOffset.json).
    * UnknownNameException naming the group, the close and the known ones when it committed none.
    */
  def groupOffsets(group: String): Map[String, Map[Int, Long]] = {
    val table = consumerOffsets
    val found = table.collect { case ((topic, g), offsets) if g == group => topic -> offsets }
    if (found.isEmpty)
      throw new UnknownNameException(
        "consumer group",
        group,
        table.keys.map(_._2).toSeq.distinct.sorted,
        s"has no committed offsets in $consumerOffsetsSource"
      )
    found
  }

  /** The parsed `config/<name>`, else its `.bak` (like `ConfigManager.load`); None when neither exists
    * or both are empty. StoreCorruptionException naming both files when what exists cannot be parsed.
    */
  private def configDocument(name: String): Option[com.fasterxml.jackson.databind.JsonNode] = {
    val dir = fs.join(root, ConfigDir)
    val texts = Seq(fs.join(dir, name), fs.join(dir, name + BackupSuffix))
      .filter(path => fs.info(path).exists(!_.isDir))
      .map(path => path -> new String(fs.readAll(path), UTF_8))
      .filter(_._2.trim.nonEmpty)
    val parsed = texts.map { case (path, text) =>
      try Right(BrokerConfig.parseFastjson(text))
      catch { case e: IllegalArgumentException => Left(s"$path: ${e.getMessage}") }
    }
    parsed.collectFirst { case Right(doc) => doc }.orElse {
      val failures = parsed.collect { case Left(failure) => failure }
      if (failures.nonEmpty)
        throw new StoreCorruptionException(fs.join(dir, name), 0, "unparseable: " + failures.mkString("; "))
      None
    }
  }

  /** Release open files (maps go with their last reference). */
  def close(): Unit = {
    openedRocksDb.foreach(_.close())
    log.close()
    index.close()
    fs.close()
  }
}

object Store {
  final val CommitlogDir = "commitlog"
  final val ConsumequeueDir = "consumequeue"
  final val RocksDbConsumequeueDir = "consumequeue_rocksdb"
  final val BatchConsumequeueDir = "batchconsumequeue"
  final val ConfigDir = "config"
  final val ConsumerOffsetFile = "consumerOffset.json"
  final val ConsumerOffsetsRocksDb = "consumerOffsets"

  /** `ConfigStorage`'s database (configManagerVersion=v2): not read, refused (§4.8). */
  final val ConfigStorageRocksDb = "rdb"
  final val TopicsFile = "topics.json"
  final val BackupSuffix = ".bak"
  final val AbortFile = "abort"
  final val CheckpointFile = "checkpoint"

  /** getMinTimestamp steps back 3 s from the smaller of the physic/logics timestamps (§6.1). */
  final val CheckpointMarginMs = 3000L

  /** `readAt` reads records closer than this in one request. */
  final val ReadRunGap = 64L << 10

  /** `readAt` fetches the first reads of a segment's runs in batches of at most this many bytes. */
  final val ReadBatchBytes: Long = 8L << 20

  private final val ProbeBytes = CommitLog.ProbeBytes

  /** Open a store read-only.
    *
    * `location`: the store root (`storePathRootDir`), a local path or a Hadoop URI (read with
    * `hadoopConf`, which may be null for local paths). `indexGeometry`: (maxHashSlotNum, maxIndexNum)
    * from broker.conf, detected per file if None. `knownEnd`: a valid end found earlier (the driver's
    * snapshot of a live log), so executors do not walk the active segment again. `checkCrcAtEnd`: check
    * BODYCRC while finding the valid end, like `checkCRCOnRecover`. `maxMessageSize`: the largest
    * decompressed body accepted; one inflating past it is corrupt (`format.Compression`, default `Layout.MaxMessageSize`).
    */
  def open(
      location: StoreLocation,
      hadoopConf: Configuration,
      indexGeometry: Option[(Int, Int)],
      knownEnd: Option[Long] = None,
      checkCrcAtEnd: Boolean = true,
      maxMessageSize: Int = Layout.MaxMessageSize
  ): Store = {
    indexGeometry.foreach { case (s, n) =>
      if (s <= 0 || n <= 0)
        throw new IllegalArgumentException(s"index geometry must be (hash slots, index entries) > 0: ($s, $n)")
    }
    if (maxMessageSize <= 0) throw new IllegalArgumentException(s"maxMessageSize must be positive, got $maxMessageSize")
    val (fs, root) = StoreFileSystem.resolve(location.path, hadoopConf)
    on(location, fs, root, indexGeometry, knownEnd, checkCrcAtEnd, maxMessageSize)
  }

  /** A store at `root` of a given file system (`open` resolves both from the location). */
  private[store] def on(
      location: StoreLocation,
      fs: StoreFileSystem,
      root: String,
      indexGeometry: Option[(Int, Int)],
      knownEnd: Option[Long],
      checkCrcAtEnd: Boolean,
      maxMessageSize: Int = Layout.MaxMessageSize
  ): Store = new Store(location, fs, root, indexGeometry, knownEnd, checkCrcAtEnd, maxMessageSize)
}
