package io.rmqstore.spark.store

import io.rmqstore.spark.io.StoreFileSystem

/** One segment file: its first byte is at `baseOffset` of the log's (or queue's) address space;
  * `modifiedMs` is its last-modified time when listed (epoch milliseconds).
  */
final case class Segment(name: String, path: String, baseOffset: Long, size: Long, modifiedMs: Long) {

  /** One past the last byte of the file. */
  def endOffset: Long = baseOffset + size

  def contains(offset: Long): Boolean = baseOffset <= offset && offset < endOffset
}

/** Segment names (20-digit offsets, §1.2), listing and lookup; topic directory names. */
object Segments {
  final val NameDigits = 20

  /** The name of the segment file starting at `offset` (`UtilAll.offset2FileName`; python/rmqstore/store/names.py
    * `segment_file_name`).
    */
  def fileName(offset: Long): String = f"$offset%020d"

  /** The base offset a segment file name stands for, None when it is not a 20-digit name. */
  def parseName(name: String): Option[Long] =
    if (name.length == NameDigits && name.forall(c => c >= '0' && c <= '9')) BigInt(name) match {
      case v if v.isValidLong => Some(v.toLong)
      case _ => None
    }
    else None

  /** Segments of a directory sorted by base offset, and the problems found on the way.
    *
    * Files not named by 20 digits are ignored; zero-length files are left out (the broker deletes an
    * empty last file, §1.2) and reported; overlapping segments are a StoreLayoutException.
    */
  def list(fs: StoreFileSystem, directory: String): (IndexedSeq[Segment], Seq[String]) = {
    val problems = Seq.newBuilder[String]
    val segments = fs.list(directory).filter(!_.isDir).flatMap { e =>
      parseName(e.name).flatMap { base =>
        if (e.size == 0) { problems += s"${e.path}: empty segment file ignored"; None }
        else Some(Segment(e.name, e.path, base, e.size, e.modifiedMs))
      }
    }.sortBy(_.baseOffset)
    val common = commonSize(segments)
    segments.foreach(s =>
      if (s.size != common) problems += s"${s.path}: ${s.size} bytes, the other segments have $common"
    )
    segments.sliding(2).foreach {
      case Seq(prev, seg) =>
        if (prev.endOffset > seg.baseOffset)
          throw new StoreLayoutException(s"${prev.path} (${prev.size} bytes) overlaps ${seg.path}")
        if (prev.endOffset < seg.baseOffset) problems += s"missing segment(s) between ${prev.path} and ${seg.path}"
      case _ =>
    }
    (segments, problems.result())
  }

  /** The size most segments have (all of them, in a healthy store); 0 without segments. */
  def commonSize(segments: Seq[Segment]): Long =
    if (segments.isEmpty) 0 else segments.map(_.size).distinct.maxBy(size => segments.count(_.size == size))

  /** The segment holding byte `offset`, by binary search; None when no file covers it. */
  def find(segments: IndexedSeq[Segment], offset: Long): Option[Segment] = {
    var lo = 0
    var hi = segments.length
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (segments(mid).baseOffset <= offset) lo = mid + 1 else hi = mid
    }
    if (lo == 0) None else Some(segments(lo - 1)).filter(_.contains(offset))
  }

  /** Why `topic` cannot name a directory under `consumequeue/`, None when it can. */
  def topicDirProblem(topic: String): Option[String] =
    if (topic == "" || topic == "." || topic == "..") Some("it is empty, '.' or '..'")
    else
      Seq("/", "\\", "\u0000").find(topic.contains(_)) match {
        case Some(bad) => Some(s"it contains ${pyRepr(bad)}")
        case None if topic.length >= 2 && topic.charAt(1) == ':' => Some("it looks like an absolute Windows path")
        case None => None
      }

  /** `topic` unchanged, or InvalidTopicException saying why it would escape the store directory. */
  def checkTopicDirName(topic: String): String = {
    topicDirProblem(topic).foreach { p =>
      throw new InvalidTopicException(s"topic ${pyRepr(topic)} cannot be a directory inside the store: $p")
    }
    topic
  }

  private def pyRepr(s: String): String =
    "'" + s.replace("\\", "\\\\").replace("\u0000", "\\x00").replace("'", "\\'") + "'"
}
