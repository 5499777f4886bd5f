package io.rmqstore.spark.stream

import org.apache.spark.internal.Logging

import io.rmqstore.spark.store.{Segments, Store}

/** Data the query still needed is gone from the store (failOnDataLoss=true). */
final class RmqDataLossException(message: String) extends IllegalStateException(message)

/** Data loss (retention deleted files the query still needs), handled like Spark's Kafka source and
  * worded like python/rmqstore/spark/stream.py: failOnDataLoss=true fails the query with an error naming
  * the lost offsets and files; false logs a warning and continues after the gap.
  */
object DataLoss extends Logging {
  val Advice: String =
    "Retention (or someone) deleted these files before the query read them. If you accept the loss, " +
      "restart the query with the option failOnDataLoss=false (it skips to the earliest data still there " +
      "and logs a warning); to read everything that is still stored, start a new query (new checkpoint) " +
      "with startingOffsets=earliest. To avoid this, keep the query within the broker's fileReservedTime."

  /** Throw RmqDataLossException (`fail`) or log a warning that the data is skipped. */
  def report(fail: Boolean, what: String): Unit =
    if (fail) throw new RmqDataLossException(s"rmqstore: data loss: $what. $Advice")
    else logWarning(s"rmqstore: data loss (failOnDataLoss=false, skipping): $what")

  /** Commit-log offsets [start, minOffset) are gone: names the deleted segment files. */
  def lostLogRange(store: Store, location: String, start: Long): String = {
    val size = math.max(store.segmentSize, 1L)
    val names = (start - start % size until store.minOffset by size).map(Segments.fileName)
    val shown = names.take(4).mkString(", ") + (if (names.size > 4) s" ... (${names.size} files)" else "")
    s"store $location: commit-log offsets [$start, ${store.minOffset}) are gone (segment file(s) $shown no " +
      s"longer exist; the earliest offset now is ${store.minOffset})"
  }

  def lostQueueRange(location: String, queue: (String, Int), start: Long, minOffset: Long): String =
    s"store $location: queue ${queue._1}/${queue._2} offsets [$start, $minOffset) are gone (its consume-queue or " +
      s"commit-log files no longer exist; the earliest queue offset now is $minOffset)"
}
