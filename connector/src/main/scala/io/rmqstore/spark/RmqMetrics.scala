package io.rmqstore.spark

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** Metrics of the scan node in the SQL tab. Spark instantiates them by class name (public, top-level,
  * no-arg constructor), so each metric is a class that only names itself; tasks report values through
  * `PartitionReader.currentMetricsValues`, the driver (work done while planning) through
  * `Scan.reportDriverMetrics`, and Spark sums both. The access path of each store (index probe, consume
  * queues, ranges, scan) is in the plan line of `statsDir` and the driver log.
  */
abstract class RmqSumMetric(metricName: String, text: String) extends CustomSumMetric {
  override def name(): String = metricName
  override def description(): String = text
}

class RecordsDecodedMetric extends RmqSumMetric(RmqMetrics.RecordsDecoded, "records decoded")
class BytesReadMetric extends RmqSumMetric(RmqMetrics.BytesRead, "commit-log bytes read")

/** Index probes (`Store.indexProbes`): one per `topic#key` per usable index file with entries, a hash-slot
  * read and its chain walk (§5.6). Counted where they happen: on the driver for a lookup planned there
  * (at most `keyProbePartitionThreshold` values), in the probe tasks otherwise; the total is the same.
  */
class IndexProbesMetric extends RmqSumMetric(RmqMetrics.IndexProbes, "index probes (slot lookups and chain walks)")
class CandidatesRejectedMetric extends RmqSumMetric(RmqMetrics.CandidatesRejected, "records rejected by pushed filters")
class RecordsSkippedMetric extends RmqSumMetric(RmqMetrics.RecordsSkipped, "invalid records skipped (PERMISSIVE)")
class CrcFailuresMetric extends RmqSumMetric(RmqMetrics.CrcFailures, "BODYCRC failures")

object RmqMetrics {
  val RecordsDecoded = "recordsDecoded"
  val BytesRead = "bytesRead"
  val IndexProbes = "indexProbes"
  val CandidatesRejected = "candidatesRejected"
  val RecordsSkipped = "recordsSkipped"
  val CrcFailures = "crcFailures"

  def supported: Array[CustomMetric] = Array(
    new RecordsDecodedMetric,
    new BytesReadMetric,
    new IndexProbesMetric,
    new CandidatesRejectedMetric,
    new RecordsSkippedMetric,
    new CrcFailuresMetric
  )

  def task(name: String, value: Long): CustomTaskMetric = {
    val (n, v) = (name, value)
    new CustomTaskMetric {
      override def name(): String = n
      override def value(): Long = v
    }
  }
}
