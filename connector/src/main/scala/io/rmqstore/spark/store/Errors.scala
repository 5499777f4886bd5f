package io.rmqstore.spark.store

import scala.collection.mutable

/** Base class of every store-layer error (python/rmqstore/store/errors.py). */
class StoreException(message: String, cause: Throwable = null) extends RuntimeException(message, cause)

/** Bytes that are not what the format says they must be: names the file, offset and cause. */
final class StoreCorruptionException(val file: String, val offset: Long, val reason: String, cause: Throwable = null)
    extends StoreException(s"$file: at physical offset $offset: $reason", cause)

/** The directory tree is not a usable RocketMQ store (missing commit log, conflicting segments). */
final class StoreLayoutException(message: String) extends StoreException(message)

/** The index cannot answer a lookup completely (missing, damaged); callers scan instead, losing no row. */
final class IndexUnavailableException(message: String) extends StoreException(message)

/** A topic name that cannot be a directory inside the store (`..`, absolute, path separators). */
final class InvalidTopicException(message: String) extends StoreException(message)

/** A topic or consumer group the store does not have: names it, the close known names ("did you mean")
  * and the known ones, so a typo never reads as an empty answer (python/rmqstore/store/errors.py).
  */
final class UnknownNameException(what: String, val name: String, known: Seq[String], why: String)
    extends StoreException(UnknownNameException.message(what, name, known, why))

object UnknownNameException {

  /** At most this many known names are listed. */
  val Shown = 30

  private def message(what: String, name: String, known: Seq[String], why: String): String = {
    val close = Names.closeMatches(name, known, 3)
    val hint = if (close.isEmpty) ". " else s"; did you mean ${close.map(Names.repr).mkString(" or ")}? "
    val listed = if (known.isEmpty) "none" else known.take(Shown).mkString(", ")
    val more = if (known.size > Shown) s" and ${known.size - Shown} more" else ""
    s"$what ${Names.repr(name)} $why${hint}Known ${what}s: $listed$more"
  }
}

/** One damaged place a PERMISSIVE read stepped over: `length` bytes of `file` from the physical `offset`
  * (where the invalid record starts) to where reading resumed (python/rmqstore/store/stats.py `Skipped`).
  */
final case class Skipped(file: String, offset: Long, length: Long, cause: String) {
  override def toString: String = s"$file: at physical offset $offset: $cause; $length bytes skipped"
}

/** Counters of what a scan or offset read did (bytes as handed out by the I/O layer). */
final case class ScanStats(var records: Long = 0, var bytesRead: Long = 0, var crcFailures: Long = 0) {
  private val skipped = mutable.LinkedHashMap.empty[(String, Long), Skipped]

  /** Bytes from each damaged place to where reading resumed. */
  var skippedBytes: Long = 0

  /** Damaged places PERMISSIVE stepped over (invalid records, bad bodies/offsets), each counted once. */
  def skippedRecords: Long = skipped.size.toLong

  /** The first damaged place a PERMISSIVE read stepped over (file, offset, cause, bytes), null if none. */
  def firstSkipped: String = skipped.headOption.map(_._2.toString).orNull

  /** Count a damaged place once (several reads of one store may meet it): `length` bytes of `file` from
    * physical `offset`.
    */
  def skip(file: String, offset: Long, length: Long, cause: String): Unit =
    if (!skipped.contains((file, offset))) {
      skipped((file, offset)) = Skipped(file, offset, length, cause)
      skippedBytes += length
    }

  /** One line for the executor's stderr naming the counts and the first damaged place (`skip_summary`). */
  def skipSummary: Option[String] = skipped.headOption.map { case (_, first) =>
    s"rmqstore: PERMISSIVE skipped $skippedRecords damaged record(s), $skippedBytes bytes; first at " +
      s"${first.file} physical offset ${first.offset}: ${first.cause}"
  }

  /** Add another stats object's counters to this one. */
  def add(other: ScanStats): ScanStats = {
    records += other.records
    bytesRead += other.bytesRead
    crcFailures += other.crcFailures
    other.skipped.values.foreach(s => skip(s.file, s.offset, s.length, s.cause))
    this
  }
}
