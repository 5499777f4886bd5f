package io.rmqstore.spark.store

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

/** Counters of what a scan or offset read did (bytes as handed out by the I/O layer). */
final case class ScanStats(
    var records: Long = 0,
    var bytesRead: Long = 0,
    var skippedRecords: Long = 0, // damaged places PERMISSIVE stepped over (invalid records, bad bodies/offsets)
    var skippedBytes: Long = 0, // bytes from each damaged place to where reading resumed
    var crcFailures: Long = 0
) {

  /** The first damaged place a PERMISSIVE read stepped over (file, offset, cause, bytes), null if none. */
  var firstSkipped: String = null

  /** Count a damaged place PERMISSIVE stepped over: `length` bytes of `file` from physical `offset`. */
  def skip(file: String, offset: Long, length: Long, cause: String): Unit = {
    skippedRecords += 1
    skippedBytes += length
    if (firstSkipped == null) firstSkipped = s"$file: at physical offset $offset: $cause; $length bytes skipped"
  }

  /** Add another stats object's counters to this one. */
  def add(other: ScanStats): ScanStats = {
    if (firstSkipped == null) firstSkipped = other.firstSkipped
    records += other.records
    bytesRead += other.bytesRead
    skippedRecords += other.skippedRecords
    skippedBytes += other.skippedBytes
    crcFailures += other.crcFailures
    this
  }
}
