package io.rmqstore.spark.store

import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets.US_ASCII
import java.nio.file.{Files, Path}
import java.security.SecureRandom

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import io.rmqstore.spark.format.{IndexFile, JavaHash, Layout}

/** Entries for the records the broker's index lacks: per segment, key hashes ascending and the physical
  * offsets beside them; `topics` of those records; `note`: what was built while opening it (None when
  * everything came from the cache), the same text each time.
  */
final case class SideIndexParts(
    parts: IndexedSeq[(Array[Long], Array[Long])],
    topics: IndexedSeq[String],
    note: Option[String]
) {

  /** Physical offsets of entries whose hash is that of `topic#key` (to be confirmed). */
  def candidates(topic: String, key: String): Iterator[Long] = {
    val hash = JavaHash.indexKeyHash(IndexFile.indexKey(topic, key)).toLong
    parts.iterator.flatMap { case (hashes, offsets) =>
      val from = SideIndex.firstAtOrAfter(hashes, hash)
      Iterator.range(from, SideIndex.firstAtOrAfter(hashes, hash + 1)).map(offsets(_))
    }
  }
}

/** What the planner needs for a key lookup (`SideIndex.forLookup`): the ranges the broker's index lacks, the
  * side index of them, and the topics a lookup without a topic predicate probes.
  */
final case class KeyLookup(lacking: IndexedSeq[(Long, Long)], side: SideIndexParts, topics: Seq[String])

/** Key lookups of one store: the broker's index files and the side index of what they lack (design §3.4),
  * like python/rmqstore/store/side_index.py. A service of the store facade (docs/design.md §1): it reads the
  * log through `records`, knows the unindexed ranges from `coverage` and keeps its arrays in the store's
  * `cache` (design §8). Not thread-safe: one per Store.
  */
private[spark] final class SideIndex(
    log: CommitLog,
    records: RecordReader,
    index: IndexFiles,
    coverage: Coverage,
    cache: Option[CacheIdentity]
) {

  /** Commit-log bytes and records read by key lookups besides the records they return: side index builds and
    * the index headers' last records (`bytesRead` of the planning or probing task).
    */
  val lookupStats: ScanStats = ScanStats()

  /** The one call of a plan (design §3.1): IndexUnavailableException when the index cannot answer
    * (`checkIndexAnswers`), else the ranges it lacks, their side index (built here when needed) and the topics
    * a lookup without a topic predicate probes.
    */
  def forLookup(): KeyLookup = {
    checkIndexAnswers()
    val lacking = lackingRanges
    val side = parts(lacking)
    KeyLookup(lacking, side, keyTopics(side))
  }

  /** IndexUnavailableException when the index cannot answer a lookup completely: an index file is unusable,
    * or the index lacks more than `ContractStore.IndexTailScanLimit` bytes besides ROLLBACK records (records past
    * its end or of lost index files, `indexHoles`; e.g. no index at all): scan instead
    * (python/rmqstore/store/store.py `side_index`).
    */
  def checkIndexAnswers(): Unit = {
    index.requireUsable()
    val holes = indexHoles
    val lacking = holes.map { case (a, b) => b - a }.sum
    if (lacking > ContractStore.IndexTailScanLimit)
      throw new IndexUnavailableException(
        s"the index lacks $lacking bytes of the log in ${holes.size} range(s) from physical offset " +
          s"${holes.head._1} (records past its end or of lost index files; limit ${ContractStore.IndexTailScanLimit}): scan instead"
      )
  }

  /** The parts of [minOffset, logEnd) outside every usable index file's span (`SideIndex.indexHoles`). */
  lazy val indexHoles: IndexedSeq[(Long, Long)] = SideIndex.indexHoles(log, index.infos, lookupStats)

  /** The commit-log ranges whose records may be missing from the broker's index, sorted and disjoint:
    * `Coverage.unindexedRanges` (ROLLBACK records), the log past the index's end and the records of lost index
    * files (`indexHoles`).
    */
  def lackingRanges: IndexedSeq[(Long, Long)] = Ranges.union(coverage.unindexedRanges ++ indexHoles)

  private var opened: SideIndexParts = _

  /** The side index of `lacking` (`lackingRanges`, here or on the driver), opened once: from the cache
    * directory where it holds, else built from a scan of only those ranges (counted in `lookupStats`) and
    * cached; its `note` says when it was built.
    */
  def parts(lacking: Seq[(Long, Long)]): SideIndexParts = {
    if (opened == null) opened = SideIndex.open(log, records, cache, lookupStats, lacking)
    opened
  }

  /** The topics a key lookup without a topic predicate probes, sorted: `Coverage.indexedTopics` and the
    * topics of the side index's records.
    */
  def keyTopics(side: SideIndexParts): Seq[String] = (coverage.indexedTopics ++ side.topics).distinct.sorted

  /** Offsets of the records that may have one of `keys` as a KEYS token or UNIQ_KEY in one of `topics`,
    * sorted and distinct, unconfirmed: the hash candidates of `topic#key` (§5.6) in the index files and in
    * the side index of `lacking` (`parts`). Raises IndexUnavailableException as `checkIndexAnswers`.
    */
  def lookup(topics: Seq[String], keys: Seq[String], lacking: Seq[(Long, Long)]): Array[Long] = {
    checkIndexAnswers()
    val extra = parts(lacking)
    val found = mutable.ArrayBuilder.make[Long]
    val probes = for (topic <- topics; key <- keys) yield (topic, key)
    index.prefetch(probes)
    for ((topic, key) <- probes) {
      found ++= index.candidates(topic, key)
      found ++= extra.candidates(topic, key)
    }
    found.result().distinct.sorted
  }
}

/** The side index's rule and files (design §3.4; spec §5.3, §5.4, §5.7): the rule of
  * python/rmqstore/store/side_index.py, in the same cache files, so what one engine built the other uses.
  *
  * The broker's index has every record of the log but (`lackingRanges`) ROLLBACK-typed records (§5.4,
  * `Coverage.unindexedRanges`), the records after the newest index file's endPhyOffset (dispatch lagging, a
  * file not flushed before a crash) and the records of index files lost in recovery (§5.7,
  * apache/rocketmq#8007): the log before the oldest file's beginPhyOffset and between one file's end and
  * the next one's beginPhyOffset (`indexHoles`). The side index holds, for every record in those ranges,
  * the entries the broker writes: UNIQ_KEY, then each KEYS token, as the hash of `topic#key` (§5.3) with
  * the record's physical offset, sorted by hash, per segment. Lookups probe it beside the broker's index
  * and confirm every candidate against the record.
  *
  * Built once per segment from a scan of only those ranges, and cached outside the store (`SegmentCache`
  * kind `side-index`: per segment the ranges indexed, the topics seen and the name of an int64 `.npy`
  * array of shape (2, n) next to the cache's JSON). A segment's entries are reused while its cache key
  * holds and the ranges they index include every range the segment lacks now. A remote store's are cached
  * too, keyed by the modification times its listing gives (so executor tasks and later plans on this
  * machine read them instead of the log); without those it keeps its side index per store.
  */
private[store] object SideIndex {
  final val CacheKind = ContractStore.SideIndexCacheKind
  final val CacheVersion = ContractStore.SideIndexCacheVersion
  final val ArraySuffix = ".npy"

  /** The note a build leaves (python/rmqstore/store/side_index.py `open_side_index`). */
  final val BuiltNote = "built a side index of the records the broker's index lacks (transaction ROLLBACK " +
    "records, records past the index's end or of lost index files) from a scan of only those"

  /** The parts of [minOffset, logEnd) outside every usable index file's span: records past the newest
    * file's end or of lost files, sorted and disjoint. A file that fills up in the middle of a record's
    * entries has the rest put into the next file, which begins with that record (RocketMQ's
    * `IndexService.buildIndex`; the conformance fixture rmq-5.5.0-broker has two): so the record at a full
    * file's endPhyOffset lacks unless the next file begins with it or the record after it, and the one at
    * a file's beginPhyOffset unless the file before ends with it or the record before it, or it is the
    * log's first record.
    */
  def indexHoles(log: CommitLog, indexFiles: Seq[IndexFileInfo], stats: ScanStats): IndexedSeq[(Long, Long)] = {
    val spans = indexFiles.flatMap { info =>
      info.header.filter(h => info.problem.isEmpty && h.entryCount > 0).map { h =>
        (h.beginPhyOffset, h.endPhyOffset, info.geometry.exists(g => h.indexCount >= g._2))
      }
    }.sorted
    val holes = mutable.ArrayBuffer.empty[(Long, Long)]
    var position = log.minOffset + log.lead // the first record (§2.13)
    val end = log.end
    var previous: Option[(Long, Long)] = None // the last file's endPhyOffset and where the next record starts
    for ((begin, last, full) <- spans) {
      if (previous.exists(_._2 == begin)) position = math.max(position, begin) // its last record was whole
      val whole = previous.fold(begin <= position)(p => begin == p._1 || begin == p._2)
      val start = if (whole) begin else afterRecord(log, stats, begin)
      if (start > position) holes += ((position, math.min(start, end)))
      val after = afterRecord(log, stats, last)
      previous = Some((last, after))
      position = math.max(position, if (full) last else after)
    }
    if (position < end) holes += ((position, end))
    holes.filter { case (a, b) => a < b }.toIndexedSeq
  }

  /** Where the record after the one at `offset` (a file's beginPhyOffset or endPhyOffset) starts, from its
    * TOTALSIZE and MAGICCODE (§2.2) and the log's entry framing (§2.13); `offset` itself when no message starts
    * there (a hole then starts with it).
    */
  private def afterRecord(log: CommitLog, stats: ScanStats, offset: Long): Long =
    Segments.find(log.segments, offset) match {
      case Some(seg) if offset < log.end =>
        val head = log.readAt(seg, offset - seg.baseOffset, 8, stats)
        if (head.limit() < 8) offset
        else {
          val (total, magic) = (head.getInt(0), head.getInt(Layout.OffMagic))
          val fits = total > 0 && total <= math.min(seg.endOffset, log.end) - offset
          if (fits && (magic == Layout.MagicV1 || magic == Layout.MagicV2)) offset + total + log.lead
          else offset
        }
      case _ => offset
    }

  /** The side index of `ranges` (`lackingRanges`), from the cache where it still holds; scans counted in `stats`. */
  def open(
      log: CommitLog,
      records: RecordReader,
      identity: Option[CacheIdentity],
      stats: ScanStats,
      ranges: Seq[(Long, Long)]
  ): SideIndexParts = {
    val live = log.segments.filter(_.baseOffset < log.end)
    val needed = live.map(seg => seg -> Ranges.within(ranges, seg.baseOffset, seg.endOffset)).filter(_._2.nonEmpty)
    val cache = identity.map(_.cache(CacheKind, CacheVersion, salt = ""))
    val known = cache.fold(Map.empty[Long, IndexedSeq[com.fasterxml.jackson.databind.JsonNode]])(
      _.load(live, log.end)
    )
    val entries = mutable.ArrayBuffer.empty[(Segment, Seq[Any])]
    val parts = mutable.ArrayBuffer.empty[(Array[Long], Array[Long])]
    val topics = mutable.SortedSet.empty[String]
    var builtRanges = 0
    for ((seg, wanted) <- needed) {
      val cached = known.get(seg.baseOffset).flatMap { entry =>
        for {
          covered <- SegmentCache.ranges(entry(0)) if entry.size >= 3 && inside(wanted, covered)
          part <- load(cache.get, entry(2).asText)
        } yield (covered, entry(1).elements.asScala.map(_.asText).toIndexedSeq, entry(2).asText, part)
      }
      val (covered, segTopics, name, part) = cached.getOrElse {
        val (part, segTopics) = build(records, stats, wanted)
        builtRanges += wanted.size
        (wanted, segTopics, cache.fold(arrayName(seg))(save(_, seg, part)), part)
      }
      parts += part
      topics ++= segTopics
      entries += ((seg, Seq(covered.map { case (a, b) => Seq(a, b) }, segTopics, name)))
    }
    val note = if (builtRanges == 0) None
    else Some {
      BuiltNote + cache.fold(" (remote store: kept per Store)")(c => s", cached in ${arrayDir(c)}")
    }
    cache.foreach { c =>
      val referenced = entries.map(_._2(2).asInstanceOf[String]).toSet
      val stale = unreferenced(c, referenced)
      if (builtRanges > 0 || stale.nonEmpty) {
        c.save(entries.toSeq, log.end)
        unreferenced(c, referenced).foreach(name => Files.deleteIfExists(arrayDir(c).resolve(name)))
      }
    }
    // once per JVM, on stderr like the Python engine's notes (the same text each time)
    note.filter(Printed.add).foreach(n => System.err.println(s"rmqstore: $n"))
    SideIndexParts(parts.filter(_._1.nonEmpty).toIndexedSeq, topics.toIndexedSeq, note)
  }

  /** Entries (hashes ascending, offsets) of the records in `ranges`, and their topics, sorted. */
  private def build(
      records: RecordReader,
      stats: ScanStats,
      ranges: Seq[(Long, Long)]
  ): ((Array[Long], Array[Long]), IndexedSeq[String]) = {
    val hashes = mutable.ArrayBuilder.make[Long]
    val offsets = mutable.ArrayBuilder.make[Long]
    val topics = mutable.SortedSet.empty[String]
    stats.add(records.scanRanges(ranges, verifyCrc = false, permissive = true) { v =>
      val topic = v.topic
      topics += topic
      val keys = Option(v.uniqKey).toSeq ++ Option(v.keys).toSeq.flatten
      for (key <- keys) {
        hashes += JavaHash.indexKeyHash(IndexFile.indexKey(topic, key)).toLong
        offsets += v.physicalOffset
      }
    })
    val (h, o) = (hashes.result(), offsets.result())
    val order = h.indices.sortBy(h(_)) // stable: entries of one hash stay in log order
    ((order.map(h(_)).toArray, order.map(o(_)).toArray), topics.toIndexedSeq)
  }

  /** The first index of the ascending `hashes` holding a value >= `hash`. */
  private[store] def firstAtOrAfter(hashes: Array[Long], hash: Long): Int = {
    var (lo, hi) = (0, hashes.length)
    while (lo < hi) { val mid = (lo + hi) >>> 1; if (hashes(mid) < hash) lo = mid + 1 else hi = mid }
    lo
  }

  /** Every range of `wanted` lies inside one of `covered` (both sorted and disjoint). */
  private def inside(wanted: Seq[(Long, Long)], covered: IndexedSeq[(Long, Long)]): Boolean = {
    var i = 0
    wanted.forall { case (start, end) =>
      while (i < covered.length && covered(i)._2 <= start) i += 1
      i < covered.length && covered(i)._1 <= start && start < end && end <= covered(i)._2
    }
  }

  /** The directory of a cache's arrays: its JSON file's path without `.json`. */
  private def arrayDir(cache: SegmentCache): Path =
    cache.path.resolveSibling(cache.path.getFileName.toString.stripSuffix(".json"))

  private val random = new SecureRandom()

  /** Notes printed on stderr by this JVM. */
  private val Printed = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** `<segment name>-<16 hex digits>.npy`, like Python's. */
  private def arrayName(seg: Segment): String = {
    val salt = new Array[Byte](8)
    random.nextBytes(salt)
    s"${seg.name}-${salt.map(b => f"$b%02x").mkString}$ArraySuffix"
  }

  /** Write a segment's entries next to the cache (failures ignored: built again next time); the name. */
  private def save(cache: SegmentCache, seg: Segment, part: (Array[Long], Array[Long])): String = {
    val name = arrayName(seg)
    try {
      val dir = arrayDir(cache)
      Files.createDirectories(dir)
      val tmp = dir.resolve(s".$name.tmp")
      try {
        Files.write(tmp, Npy.encode(part._1, part._2))
        SegmentCache.moveAtomically(tmp, dir.resolve(name))
      } finally Files.deleteIfExists(tmp)
    } catch { case NonFatal(_) => () }
    name
  }

  /** A cached segment's entries, None when its file is gone or not an int64 (2, n) array. */
  private def load(cache: SegmentCache, name: String): Option[(Array[Long], Array[Long])] =
    try Npy.decode(Files.readAllBytes(arrayDir(cache).resolve(name)))
    catch { case NonFatal(_) => None }

  /** The arrays of segments rebuilt or gone (retention), by name. */
  private def unreferenced(cache: SegmentCache, referenced: Set[String]): Seq[String] =
    try {
      val stream = Files.list(arrayDir(cache))
      try stream.iterator.asScala.map(_.getFileName.toString)
          .filter(n => n.endsWith(ArraySuffix) && !referenced(n)).toList
      finally stream.close()
    } catch { case NonFatal(_) => Nil }

  /** NumPy's `.npy` format (format versions 1-3) for int64 arrays of shape (2, n): little-endian 8-byte
    * integers, C order (row 0 then row 1) or Fortran order (pairs), after a magic string, a version, the
    * header's length and a Python dict literal padded with spaces to a multiple of 64 bytes.
    */
  private[store] object Npy {
    private val Magic = Array[Byte](0x93.toByte, 'N', 'U', 'M', 'P', 'Y')
    private val Header = """\{'descr': '<i8', 'fortran_order': (True|False), 'shape': \(2, (\d+)\), \}\s*""".r

    def encode(row0: Array[Long], row1: Array[Long]): Array[Byte] = {
      val dict = s"{'descr': '<i8', 'fortran_order': False, 'shape': (2, ${row0.length}), }"
      val padded = dict + " " * ((64 - (10 + dict.length + 1) % 64) % 64) + "\n"
      val out = ByteBuffer.allocate(10 + padded.length + 16 * row0.length).order(ByteOrder.LITTLE_ENDIAN)
      out.put(Magic).put(1.toByte).put(0.toByte).putShort(padded.length.toShort).put(padded.getBytes(US_ASCII))
      row0.foreach(out.putLong)
      row1.foreach(out.putLong)
      out.array()
    }

    def decode(bytes: Array[Byte]): Option[(Array[Long], Array[Long])] = {
      val buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN)
      if (bytes.length < 10 || !bytes.take(6).sameElements(Magic)) return None
      val major = bytes(6)
      val (length, start) =
        if (major == 1) (buf.getShort(8) & 0xffff, 10) else if (bytes.length >= 12) (buf.getInt(8), 12) else (-1, 0)
      if (length < 0 || start + length > bytes.length) return None
      new String(bytes, start, length, US_ASCII) match {
        case Header(fortran, count) if bytes.length - start - length == 16L * count.toLong =>
          val n = count.toInt
          val longs = buf.position(start + length).slice().order(ByteOrder.LITTLE_ENDIAN).asLongBuffer()
          val all = new Array[Long](2 * n)
          longs.get(all)
          if (fortran == "False") Some((all.take(n), all.drop(n)))
          else Some((Array.tabulate(n)(i => all(2 * i)), Array.tabulate(n)(i => all(2 * i + 1))))
        case _ => None
      }
    }
  }
}
