package io.rmqstore.spark.store

import scala.collection.mutable

import io.rmqstore.spark.format.{ByteSource, IndexFile, JavaHash}
import io.rmqstore.spark.io.{CachedPages, FileEntry, LocalFileSystem, RandomAccess, StoreFileSystem}

/** One index file and whether it can be used: `problem` says why not (None when it can). */
final case class IndexFileInfo(
    name: String,
    path: String,
    size: Long,
    geometry: Option[(Int, Int)],
    header: Option[IndexFile.Header],
    problem: Option[String]
)

/** The `index/` directory: files oldest -> newest by name (§1.2, §5.7), geometry, probes; like
  * python/rmqstore/store/index.py.
  *
  * Each file's geometry (hash slots S, entries N) is detected from the file unless the user gave it.
  * A file that cannot be read as an index is listed with its `problem`; lookups then refuse to answer
  * (IndexUnavailableException) so the caller scans instead and no row is lost. Index files are never
  * scanned, only probed, so local and remote ones alike are read through `CachedPages` of positioned reads
  * (a page fault in a map would read the read-ahead window around each probed page): opening one reads its
  * header and the samples that validate its geometry,
  * a probe its slot and the entries its chain walk visits (design §3), never the whole file unless its
  * geometry has to be searched for (a file of other than the default size, geometry not given).
  */
private[spark] final class IndexFiles(fs: StoreFileSystem, directory: String, geometry: Option[(Int, Int)])
    extends AutoCloseable {
  import IndexFiles._

  private val opened = mutable.ArrayBuffer.empty[RandomAccess]
  private val sources = mutable.HashMap.empty[String, ByteSource]
  private val views = mutable.HashMap.empty[String, IndexFile.View]
  private var probeCount = 0L

  /** Index probes made so far: one per `topic#key` per usable index file with entries whose hash slot is
    * read and chain walked by `candidates` (§5.6), empty slots included.
    */
  def probes: Long = probeCount

  // Every 17-digit file in `index/`, oldest first (the broker sorts names the same way).
  private lazy val listed = fs.list(directory).filter(e => !e.isDir && isIndexName(e.name))

  /** Every index file, oldest first, inspected. */
  lazy val infos: IndexedSeq[IndexFileInfo] = listed.map(inspect)

  /** endPhyOffset in the header of the newest index file by name (§5.1, §5.5: the physical offset of the last
    * record it indexed, a record start, written at every put; a new file starts with its predecessor's, §5.7),
    * None without index files or when that header cannot be read (python/rmqstore/store/index.py
    * `last_indexed_offset`). Only the header is read. A hint: the record there may be gone (an index outlives
    * lost log pages).
    */
  def newestEndPhyOffset: Option[Long] =
    listed.lastOption.filter(e => e.size >= IndexFile.HeaderSize && e.size <= Int.MaxValue).flatMap { e =>
      try Some(IndexFile.header(source(e.path, e.size)).endPhyOffset)
      catch { case _: java.io.IOException => None }
    }

  // The file's bytes, opened once, read through `CachedPages`.
  private def source(path: String, size: Long): ByteSource =
    sources.getOrElseUpdate(
      path, {
        val file = fs.open(path, finished = true, random = true)
        opened += file
        new CachedPages(file)
      }
    )

  private def inspect(e: FileEntry): IndexFileInfo = {
    val (name, path, size) = (e.name, e.path, e.size)
    if (size > Int.MaxValue)
      return IndexFileInfo(name, path, size, None, None, Some(s"$size bytes: too large for an index file"))
    val data = source(path, size)
    try {
      val header = IndexFile.header(data)
      judged(e, data) match {
        case Left(problem) => IndexFileInfo(name, path, size, None, Some(header), Some(problem))
        case Right(((slots, entries), geometryProblem)) =>
          val problem = headerProblem(header, slots, entries).orElse(geometryProblem)
          if (problem.isEmpty) views(path) = new IndexFile.View(data, slots, entries)
          IndexFileInfo(name, path, size, Some((slots, entries)), Some(header), problem)
      }
    } catch { case x: IllegalArgumentException => IndexFileInfo(name, path, size, None, None, Some(x.getMessage)) }
  }

  /** The file's geometry (given, or detected, which checks it) and what `IndexFile.geometryProblem` finds
    * wrong with a given one, or why none fits: for a remote file once per identity in this JVM (`Judged`).
    */
  private def judged(e: FileEntry, data: ByteSource): Verdict = {
    val key = (e.path, e.size, e.modifiedMs, geometry)
    Option(Judged.get(key)).getOrElse {
      val verdict =
        try {
          val (slots, entries) = geometry.getOrElse(IndexFile.detectGeometry(data))
          val problem = if (geometry.isDefined) IndexFile.geometryProblem(data, slots, entries) else None
          Right(((slots, entries), problem))
        } catch { case x: IllegalArgumentException => Left(x.getMessage) }
      if (e.modifiedMs > 0 && !fs.isInstanceOf[LocalFileSystem]) Judged.put(key, verdict)
      verdict
    }
  }

  def problems: Seq[String] = infos.flatMap(i => i.problem.map(p => s"${i.path}: $p"))

  /** Fails with IndexUnavailableException when an index file is unusable (`problems`): no index answer then. */
  def requireUsable(): Unit = {
    val bad = problems
    if (bad.nonEmpty) throw new IndexUnavailableException("index files unusable: " + bad.mkString("; "))
  }

  /** endPhyOffset of the newest file with entries: records after it are not indexed yet (§5.5, §5.7). */
  def indexedEnd: Long =
    infos.reverseIterator.flatMap(_.header).find(_.entryCount > 0).map(_.endPhyOffset).getOrElse(0L)

  /** Hash-matching physical offsets for `topic#key` in every usable file, sorted and distinct; unconfirmed
    * (hashes collide).
    *
    * Times are not compared, neither the entries' (1-second times with a roll-over quirk, §5.5) nor the
    * headers' (the first and last entry's store times: a broker clock stepped back puts records of any
    * time between them), so no file is pruned by time: callers filter on the record's own store timestamp.
    */
  def candidates(topic: String, key: String): Array[Long] = {
    val keyHash = JavaHash.indexKeyHash(IndexFile.indexKey(topic, key))
    val found = usable.reverseIterator.flatMap { view =>
      probeCount += 1
      view.candidates(keyHash, Long.MinValue, Long.MaxValue)
    }
    found.toArray.distinct.sorted
  }

  /** Read the slots and first chain entries of many `(topic, key)` probes in two batches per file (remote
    * files; nothing for mapped ones), before `candidates` walks them one by one.
    */
  def prefetch(probes: Seq[(String, String)]): Unit = {
    val hashes = probes.map { case (topic, key) => JavaHash.indexKeyHash(IndexFile.indexKey(topic, key)) }.distinct
    if (hashes.length > 1) usable.foreach(_.prefetch(hashes))
  }

  // Views of the usable files with entries, oldest first.
  private def usable: IndexedSeq[IndexFile.View] =
    infos.flatMap(info => views.get(info.path)).filter(_.header.entryCount > 0)

  def close(): Unit = {
    opened.foreach(_.close())
    opened.clear()
    sources.clear()
  }
}

private[store] object IndexFiles {
  final val IndexDir = "index"

  /** Files judged per JVM (least recently used dropped first). */
  final val JudgedFiles = 1 << 12

  private type Identity = (String, Long, Long, Option[(Int, Int)])

  /** A geometry and the problem found with it, or why no geometry fits. */
  private type Verdict = Either[String, ((Int, Int), Option[String])]

  /** Geometry verdicts of remote index files by identity (path, size, last-modified time as listed) and the
    * geometry given: a file's samples are read once per JVM, not by every task that opens the store (executor
    * key probes). The header, which a live broker rewrites, is read each time; a mapped local file's samples
    * cost nothing, so they are judged each time.
    */
  private val Judged = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[Identity, Verdict](16, 0.75f, true) {
      override def removeEldestEntry(eldest: java.util.Map.Entry[Identity, Verdict]): Boolean = size > JudgedFiles
    }
  )

  /** `timeMillisToHumanString`: yyyyMMddHHmmssSSS of the file's creation (§1.2). */
  final val NameDigits = 17

  def isIndexName(name: String): Boolean = name.length == NameDigits && name.forall(c => c >= '0' && c <= '9')

  /** Header values that no index file with this geometry can have (§5.1, §5.2). */
  def headerProblem(h: IndexFile.Header, hashSlots: Int, indexEntries: Int): Option[String] =
    if (h.indexCount < 0 || h.indexCount > indexEntries) Some(s"indexCount ${h.indexCount} outside 0..$indexEntries")
    else if (h.usedSlots < 0 || h.usedSlots > hashSlots) Some(s"hashSlotCount ${h.usedSlots} outside 0..$hashSlots")
    else if (h.entryCount > 0 && h.beginPhyOffset > h.endPhyOffset)
      Some(s"beginPhyOffset ${h.beginPhyOffset} > endPhyOffset ${h.endPhyOffset}")
    else None
}
