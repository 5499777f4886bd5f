package io.rmqstore.spark

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** Metrics of the scan node in the SQL tab. Spark instantiates them by class name (public, top-level,
  * no-arg constructor); tasks report values through `PartitionReader.currentMetricsValues`.
  */
class RecordsDecodedMetric extends CustomSumMetric {
  override def name(): String = RmqMetrics.RecordsDecoded
  override def description(): String = "records decoded"
}

class BytesReadMetric extends CustomSumMetric {
  override def name(): String = RmqMetrics.BytesRead
  override def description(): String = "commit-log bytes read"
}

class IndexProbesMetric extends CustomSumMetric {
  override def name(): String = RmqMetrics.IndexProbes
  override def description(): String = "index probes"
}

class CandidatesRejectedMetric extends CustomSumMetric {
  override def name(): String = RmqMetrics.CandidatesRejected
  override def description(): String = "records rejected by pushed filters"
}

class RecordsSkippedMetric extends CustomSumMetric {
  override def name(): String = RmqMetrics.RecordsSkipped
  override def description(): String = "invalid records skipped (PERMISSIVE)"
}

class CrcFailuresMetric extends CustomSumMetric {
  override def name(): String = RmqMetrics.CrcFailures
  override def description(): String = "BODYCRC failures"
}

object RmqMetrics {
  val RecordsDecoded = "recordsDecoded"
  val BytesRead = "bytesRead"
  val IndexProbes = "indexProbes"
  val CandidatesRejected = "candidatesRejected"
  val RecordsSkipped = "recordsSkipped"
  val CrcFailures = "crcFailures"

  def supported: Array[CustomMetric] = Array(new RecordsDecodedMetric, new BytesReadMetric, new IndexProbesMetric,
    new CandidatesRejectedMetric, new RecordsSkippedMetric, new CrcFailuresMetric)

  def task(name: String, value: Long): CustomTaskMetric = {
    val (n, v) = (name, value)
    new CustomTaskMetric {
      override def name(): String = n
      override def value(): Long = v
    }
  }
}
