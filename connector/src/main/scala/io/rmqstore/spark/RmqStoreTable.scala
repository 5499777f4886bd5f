package io.rmqstore.spark

import java.util

import org.apache.spark.sql.connector.catalog.{SupportsRead, TableCapability}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** One read of one or more stores: immutable, no per-query state (Spark builds a scan builder per
  * planned query). Batch reads and streams (`stream.RmqMicroBatchStream`).
  */
class RmqStoreTable(schema: StructType, options: RmqOptions) extends SupportsRead {
  override def name(): String = s"rmqstore ${options.paths.mkString(", ")}"

  override def schema(): StructType = schema

  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ)

  override def newScanBuilder(scanOptions: CaseInsensitiveStringMap): ScanBuilder =
    new RmqScanBuilder(schema, options)
}
