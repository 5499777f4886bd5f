package io.rmqstore.spark.store

import org.apache.hadoop.conf.Configuration

import io.rmqstore.spark.format.{DLedgerEntry, Layout, RecordView}
import io.rmqstore.spark.io.StoreFileSystem

/** Where a store lives: a local path or a Hadoop URI (serializable, cheap to ship to executors). */
final case class StoreLocation(path: String)

/** One RocketMQ broker store, opened read-only (design §4.1), like python/rmqstore/store/store.py: a facade
  * that builds the store's services in dependency order (docs/design.md §1) and delegates to them.
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

  if (!fs.isDir(commitlogDir))
    throw new StoreLayoutException(
      s"${location.path}: commit-log directory $commitlogDir does not exist (a store root holds $CommitlogDir/)"
    )

  private val (segmentList, layoutProblems) = Segments.list(fs, commitlogDir)

  // ---- the services, in dependency order ----------------------------------------------------------

  private[spark] val config = new StoreConfig(fs, root)
  private[spark] val index = new IndexFiles(fs, fs.join(root, IndexFiles.IndexDir), indexGeometry)
  private[spark] val log: CommitLog =
    new CommitLog(
      fs,
      segmentList,
      checkCrcAtEnd,
      knownEnd,
      maxMessageSize,
      () => index.newestEndPhyOffset,
      () => config.crashMinTimestamp,
      lead
    )
  private[spark] val records = new RecordReader(log, maxMessageSize)
  private[spark] val queues = new Queues(fs, root, log, config)
  private val cacheIdentity = CacheIdentity.of(fs, location.path, root, commitlogDir, segmentList)
  private[spark] val coverage = new Coverage(log, queues, cacheIdentity)
  private[spark] val lostUnits = new LostUnits(log, coverage, index, queues)
  private[spark] val sideIndex = new SideIndex(log, records, index, coverage, cacheIdentity)
  private[spark] lazy val timeline = new Timeline(log, cacheIdentity)
  private[spark] val census = new Census(log, queues, coverage, records, cacheIdentity)

  // ---- the log ------------------------------------------------------------------------------------

  /** Every commit-log segment file, pre-allocated ones included, by base offset. */
  def segments: IndexedSeq[Segment] = log.segments

  /** First byte of the first segment. */
  def minOffset: Long = log.minOffset

  /** The valid end of the log (recovery rules, §2.12); see `logEndReason` for why it is there. */
  def logEnd: Long = log.end

  def logEndReason: String = log.endExplanation

  /** The size most commit-log segments have (`mapedFileSizeCommitLog`), 0 without segments. */
  def segmentSize: Long = Segments.commonSize(segments)

  /** Everything odd found so far: layout, bad topic names, unusable index files. */
  def problems: Seq[String] = layoutProblems ++ queues.problems ++ index.problems

  /** The RocketMQ features this store's files show (§1.6, `Shape`). */
  lazy val shape: Shape = Shape.detect(
    fs,
    root,
    try config.topicsDocument
    catch { case _: StoreException => None }
  )

  /** The commit-log tail that streaming walks (`Tail`), reading through this store's services. */
  def tail(cache: LogWalkCache, permissive: Boolean): Tail =
    new Tail(log, index, queues, config, cache, permissive)

  // ---- records (`RecordReader`) -------------------------------------------------------------------

  def scan(start: Long, end: Long, verifyCrc: Boolean, permissive: Boolean)(f: RecordView => Unit): ScanStats =
    records.scan(start, end, verifyCrc, permissive)(f)

  def scanWhile(start: Long, end: Long, verifyCrc: Boolean, permissive: Boolean)(f: RecordView => Boolean)
      : ScanStats = records.scanWhile(start, end, verifyCrc, permissive)(f)

  def scanRanges(ranges: Seq[(Long, Long)], verifyCrc: Boolean, permissive: Boolean)(
      f: RecordView => Unit
  ): ScanStats = records.scanRanges(ranges, verifyCrc, permissive)(f)

  def resync(offset: Long): Long = records.resync(offset)

  def segmentSpans: IndexedSeq[(Long, Long)] = records.segmentSpans

  def readAt(offsets: Array[Long], verifyCrc: Boolean, permissive: Boolean, strict: Boolean = true)(
      f: RecordView => Unit
  ): ScanStats = records.readAt(offsets, verifyCrc, permissive, strict)(f)

  // ---- index (`IndexFiles`, `SideIndex`) ----------------------------------------------------------

  /** Index files oldest first, each with its geometry, header and problem. */
  def indexFiles: Seq[IndexFileInfo] = index.infos

  /** endPhyOffset of the newest index file with entries: records after it are not indexed yet. */
  def indexedEnd: Long = index.indexedEnd

  /** Hash candidates for `topic#key` in every index file (§5.6), sorted and distinct; unconfirmed (check
    * topic, KEYS/UNIQ_KEY and store time on the record). Records after `indexedEnd` and ROLLBACK records
    * are not indexed. Throws IndexUnavailableException when an index file is unusable (scan instead).
    */
  def indexCandidates(topic: String, key: String): Array[Long] = {
    index.requireUsable()
    index.candidates(topic, key)
  }

  /** Index probes made through this Store so far by `indexLookup` and `indexCandidates` (`IndexFiles.probes`):
    * topics x keys x usable index files with entries per lookup; the scan's `indexProbes` metric.
    */
  def indexProbes: Long = index.probes

  def checkIndexAnswers(): Unit = sideIndex.checkIndexAnswers()

  def indexHoles: IndexedSeq[(Long, Long)] = sideIndex.indexHoles

  def lackingRanges: IndexedSeq[(Long, Long)] = sideIndex.lackingRanges

  def sideIndex(lacking: Seq[(Long, Long)]): SideIndexParts = sideIndex.parts(lacking)

  def lookupStats: ScanStats = sideIndex.lookupStats

  def indexLookup(topics: Seq[String], keys: Seq[String], lacking: Seq[(Long, Long)]): Array[Long] =
    sideIndex.lookup(topics, keys, lacking)

  def keyTopics(side: SideIndexParts): Seq[String] = sideIndex.keyTopics(side)

  // ---- consume queues (`Queues`) ------------------------------------------------------------------

  def topics: Seq[String] = queues.topics

  def queueIds(topic: String): Seq[Int] = queues.queueIds(topic)

  def queueFloor(topic: String, queueId: Int, offset: Long): Long = queues.queueFloor(topic, queueId, offset)

  def queueRange(topic: String, queueId: Int): (Long, Long) = queues.queueRange(topic, queueId)

  def queueLastPhy(topic: String, queueId: Int): Option[Long] = queues.queueLastPhy(topic, queueId)

  def queueUnits(topic: String, queueId: Int, fromQueueOffset: Long, toQueueOffset: Long)
      : Iterator[(Long, Long, Int, Long)] = queues.queueUnits(topic, queueId, fromQueueOffset, toQueueOffset)

  def queueSpans(topic: String, queueId: Int, start: Long, end: Long): Seq[(Long, Long)] =
    queues.queueSpans(topic, queueId, start, end)

  def queueOffsets(
      topic: String,
      queueId: Int,
      start: Long,
      end: Long,
      tags: Option[Seq[String]],
      damage: UnitDamage => Unit
  ): Iterator[Long] = queues.queueOffsets(topic, queueId, start, end, tags, damage)

  def queueSelection(
      topic: String,
      queueId: Int,
      start: Long,
      end: Long,
      tags: Option[Seq[String]],
      damage: UnitDamage => Unit = _ => ()
  ): Iterator[QueueUnit] = queues.queueSelection(topic, queueId, start, end, tags, damage)

  // ---- coverage (`Coverage`) ----------------------------------------------------------------------

  def uncoveredRanges: IndexedSeq[(Long, Long)] = coverage.uncoveredRanges

  def uncoveredRangesOf(topics: Set[String]): IndexedSeq[(Long, Long)] = coverage.uncoveredRangesOf(topics)

  def unindexedRanges: IndexedSeq[(Long, Long)] = coverage.unindexedRanges

  def indexedTopics: Seq[String] = coverage.indexedTopics

  // ---- lost units (`LostUnits`) -------------------------------------------------------------------

  /** The units missing at the end of the consume queue of (topic, queueId), each naming the record it should
    * point to (docs/damage.md §3).
    */
  def lostAtEnd(topic: String, queueId: Int): Seq[UnitDamage] = lostUnits.lostAtEnd(topic, queueId)

  // ---- time (`Timeline`) --------------------------------------------------------------------------

  /** The store times of the log summarized per segment as runs, in log order (see `seekTime`). */
  def timeRuns: IndexedSeq[TimeRun] = timeline.runs

  /** Physical offset of the first record (log order) with storeTimestamp >= ms (`logEnd` if none), exact also
    * when the broker's clock stepped back (design §3.5).
    */
  def seekTime(ms: Long): Long = timeline.firstAtOrAfter(ms)

  /** Commit-log byte ranges [start, end), in log order, holding every record with beginMs <=
    * storeTimestamp <= endMs (inclusive; Long.MinValue / Long.MaxValue: unbounded), and few others.
    */
  def timeRanges(beginMs: Long, endMs: Long): Seq[(Long, Long)] = timeline.ranges(beginMs, endMs)

  // ---- config (`StoreConfig`) ---------------------------------------------------------------------

  def abortPresent: Boolean = config.abortPresent

  def consumerOffsets: Map[(String, String), Map[Int, Long]] = config.consumerOffsets

  def groupOffsets(group: String): Map[String, Map[Int, Long]] = config.groupOffsets(group)

  /** Release open files (maps go with their last reference). */
  def close(): Unit = {
    queues.close()
    log.close()
    index.close()
    fs.close()
  }
}

object Store {
  final val CommitlogDir = "commitlog"

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
