package io.rmqstore.spark

import java.util

import org.apache.spark.sql.connector.catalog.{SupportsRead, TableCapability}
import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** One read of one or more stores: immutable, no per-query state (Spark builds a scan builder per
  * planned query). Batch reads and streams (`stream.RmqMicroBatchStream`). `pinned`: predicates every
  * scan pushes, as if the query had them (a catalog's topic table, `RmqCatalog`); streams push nothing,
  * so a table with pinned predicates is batch-only.
  */
class RmqStoreTable(schema: StructType, options: RmqOptions, pinned: Array[V2Predicate] = Array.empty)
    extends SupportsRead {
  override def name(): String = s"rmqstore ${options.paths.mkString(", ")}"

  override def schema(): StructType = schema

  override def capabilities(): util.Set[TableCapability] =
    if (pinned.nonEmpty) util.EnumSet.of(TableCapability.BATCH_READ)
    else util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ)

  override def newScanBuilder(scanOptions: CaseInsensitiveStringMap): ScanBuilder =
    new RmqScanBuilder(schema, options, pinned)
}
