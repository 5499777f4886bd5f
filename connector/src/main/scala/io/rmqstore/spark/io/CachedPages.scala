package io.rmqstore.spark.io

import java.nio.ByteBuffer

import scala.collection.mutable

import io.rmqstore.spark.format.ByteSource

/** A file whose small reads go through aligned pages of `PageSize` bytes kept in memory (up to `MaxPages`,
  * the least recently used dropped first): for random reads that come back near each other, like index
  * chain walks (python/rmqstore/io/remote.py `CachedPages`). The missing pages of one read or `prefetch`
  * are fetched together: pages less than `CoalescePages` apart share one ranged read (the hole is read
  * too, up to `MaxRunBytes` per read), and the reads go to the file in one `readRanges` call. Reads longer
  * than `BypassBytes` go to the file directly. Not thread-safe. The file stays open: it belongs to whoever
  * opened it.
  */
final class CachedPages(file: RandomAccess) extends ByteSource {
  import CachedPages._

  private val pages = new java.util.LinkedHashMap[Long, ByteBuffer](64, 0.75f, true) {
    override def removeEldestEntry(eldest: java.util.Map.Entry[Long, ByteBuffer]): Boolean = size > MaxPages
  }

  def length: Long = file.length

  def bytes(pos: Long, len: Int): ByteBuffer = {
    if (pos < 0 || len < 0) throw new IllegalArgumentException(s"invalid read range: offset $pos, length $len")
    val n = math.max(0L, math.min(len.toLong, length - pos)).toInt
    if (n == 0) ByteBuffer.allocate(0)
    else if (n > BypassBytes) file.read(pos, n)
    else {
      val (first, last) = (pos / PageSize, (pos + n - 1) / PageSize)
      fetch(first to last)
      if (first == last) page(first).slice((pos - first * PageSize).toInt, n)
      else {
        val out = ByteBuffer.allocate(n)
        for (p <- first to last) {
          val from = math.max(pos, p * PageSize)
          val to = math.min(pos + n, (p + 1) * PageSize)
          out.put((from - pos).toInt, page(p), (from - p * PageSize).toInt, (to - from).toInt)
        }
        out
      }
    }
  }

  override def getInt(pos: Long): Int = small(pos, 4).fold(super.getInt(pos))(b => b._1.getInt(b._2))
  override def getLong(pos: Long): Long = small(pos, 8).fold(super.getLong(pos))(b => b._1.getLong(b._2))

  // The page holding [pos, pos + n) and the index of pos in it, when one page holds them.
  private def small(pos: Long, n: Int): Option[(ByteBuffer, Int)] = {
    val p = pos / PageSize
    if (pos < 0 || pos + n > length || (pos + n - 1) / PageSize != p) None
    else {
      fetch(p to p)
      Some((page(p), (pos - p * PageSize).toInt))
    }
  }

  override def prefetch(ranges: Seq[(Long, Int)]): Unit =
    fetch(ranges.iterator.filter { case (pos, len) => pos >= 0 && len > 0 && pos < length }.flatMap {
      case (pos, len) => (pos / PageSize) to ((math.min(pos + len, length) - 1) / PageSize)
    }.toSeq)

  override def inMemory: ByteSource = {
    if (length > Int.MaxValue) throw new IllegalArgumentException(s"$length bytes do not fit in memory")
    ByteSource(file.read(0, length.toInt))
  }

  private def page(p: Long): ByteBuffer = pages.get(p)

  /** Read the pages of `numbers` not kept yet: nearby ones in one ranged read, all reads in one batch. */
  private def fetch(numbers: Seq[Long]): Unit = {
    val missing = numbers.filter(p => !pages.containsKey(p)).distinct.sorted
    if (missing.isEmpty) return
    val runs = mutable.ArrayBuffer.empty[(Long, Long)] // [first page, last page]
    for (p <- missing)
      if (runs.nonEmpty && p - runs.last._2 <= CoalescePages && (p - runs.last._1 + 1) * PageSize <= MaxRunBytes)
        runs(runs.length - 1) = (runs.last._1, p)
      else runs += ((p, p))
    val data = file.readRanges(runs.map { case (a, b) => (a * PageSize, ((b - a + 1) * PageSize).toInt) }.toSeq)
    for (((a, b), buf) <- runs.zip(data); p <- a to b) {
      val at = ((p - a) * PageSize).toInt
      if (at < buf.limit()) pages.put(p, buf.slice(at, math.min(PageSize, buf.limit() - at)))
    }
  }
}

object CachedPages {
  final val PageSize = 4096

  /** 64 MiB: the pages of a few thousand probes (a slot and an entry each). */
  final val MaxPages = 16384

  /** Missing pages at most this many apart are read together (the hole is 8 KiB at most, like Arrow's
    * `hole_size_limit` in python/rmqstore/io/remote.py `COALESCE_GAP`).
    */
  final val CoalescePages = 3

  /** Largest read that joins several missing pages. */
  final val MaxRunBytes: Long = 8L << 20

  final val BypassBytes: Int = 64 << 10
}
