package io.rmqstore.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.internal.connector.SupportsMetadata
import org.apache.spark.sql.types.StructType

import plan.Predicate

/** A pushed aggregate answered on the driver from metadata (`MetadataAggregates`): one task returns its rows.
  * explain() shows `PushedAggregation` beside `PushedFilters`; the driver metrics and the statsDir plan line
  * (access `metadata`) say what answering read of the commit logs: only the bytes no unit covers.
  */
class RmqAggregateScan(
    answer: AggregateAnswer,
    options: RmqOptions,
    consumed: IndexedSeq[Predicate],
    pushed: Array[V2Predicate]
) extends Scan with Batch with SupportsMetadata {

  override def readSchema(): StructType = answer.schema

  override def toBatch: Batch = this

  override def description(): String =
    s"rmqstore [${options.paths.mkString(", ")}] PushedAggregation: ${answer.pushed} " +
      s"PushedFilters: ${RmqScan.pushedText(pushed)}"

  override def getMetaData(): Map[String, String] = Map(
    "Format" -> "rmqstore",
    "PushedAggregation" -> answer.pushed,
    "PushedFilters" -> RmqScan.pushedText(pushed),
    "ReadSchema" -> answer.schema.catalogString
  )

  /** The one task, and the statsDir plan line of the answer. */
  override def planInputPartitions(): Array[InputPartition] = {
    StatsLog.write(
      options.statsDir,
      Map(
        "event" -> "plan",
        "engine" -> "jvm",
        "access" -> Seq("metadata"),
        "tasks" -> 1,
        "aggregation" -> answer.pushed,
        "bytes_read" -> answer.bytesRead,
        "records_decoded" -> answer.recordsRead,
        "pushed" -> consumed.map(Predicate.describe)
      )
    )
    Array(AnsweredRows(answer.rows))
  }

  override def createReaderFactory(): PartitionReaderFactory = AnsweredRowsReader

  override def supportedCustomMetrics(): Array[CustomMetric] = RmqMetrics.supported

  override def reportDriverMetrics(): Array[CustomTaskMetric] = Array(
    RmqMetrics.task(RmqMetrics.BytesRead, answer.bytesRead),
    RmqMetrics.task(RmqMetrics.RecordsDecoded, answer.recordsRead)
  )
}

/** The rows of an answered aggregate, as one task. */
final case class AnsweredRows(rows: Array[InternalRow]) extends InputPartition

/** Returns an `AnsweredRows` partition's rows. */
object AnsweredRowsReader extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new PartitionReader[InternalRow] {
      private val rows = partition.asInstanceOf[AnsweredRows].rows.iterator
      private var current: InternalRow = _
      override def next(): Boolean = rows.hasNext && { current = rows.next(); true }
      override def get(): InternalRow = current
      override def close(): Unit = ()
    }
}
