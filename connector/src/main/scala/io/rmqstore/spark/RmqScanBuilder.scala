package io.rmqstore.spark

import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.connector.read.{
  Scan,
  ScanBuilder,
  SupportsPushDownRequiredColumns,
  SupportsPushDownV2Filters
}
import org.apache.spark.sql.types.StructType

import plan.Predicate

/** Per-query pushdown state: the predicates consumed (with `pushdown=false` none) and the columns the
  * query needs. Consumed predicates are planned and every candidate row is confirmed against them;
  * the rest are returned to Spark. `pinned` (`RmqStoreTable`) are pushed and consumed first, whatever the
  * query and `pushdown`.
  */
class RmqScanBuilder(schema: StructType, options: RmqOptions, pinned: Array[V2Predicate] = Array.empty)
    extends ScanBuilder with SupportsPushDownV2Filters with SupportsPushDownRequiredColumns {
  private val pinnedConsumed = pinned.flatMap(PredicateTranslator.translate).toIndexedSeq
  private var pushed: Array[V2Predicate] = pinned
  private var consumed: IndexedSeq[Predicate] = pinnedConsumed
  private var required: StructType = schema

  override def pushPredicates(predicates: Array[V2Predicate]): Array[V2Predicate] = {
    if (!options.pushdown) return predicates
    val translated = predicates.map(p => p -> PredicateTranslator.translate(p))
    pushed = pinned ++ translated.collect { case (p, Some(_)) => p }
    consumed = pinnedConsumed ++ translated.flatMap(_._2)
    translated.collect { case (p, None) => p }
  }

  override def pushedPredicates(): Array[V2Predicate] = pushed

  override def pruneColumns(requiredSchema: StructType): Unit = {
    val wanted = requiredSchema.fieldNames.toSet
    required = StructType(schema.fields.filter(f => wanted(f.name)))
  }

  override def build(): Scan = new RmqScan(required, options, consumed, pushed)
}
