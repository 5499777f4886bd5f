package io.rmqstore.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation
import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.connector.read.{
  Scan,
  ScanBuilder,
  SupportsPushDownAggregates,
  SupportsPushDownLimit,
  SupportsPushDownRequiredColumns,
  SupportsPushDownV2Filters
}
import org.apache.spark.sql.types.StructType

import plan.Predicate

/** Per-query pushdown state: the predicates consumed (with `pushdown=false` none), the columns the query needs,
  * an aggregate answered from metadata (`MetadataAggregates`) and a limit. Consumed predicates are planned and
  * every candidate row is confirmed against them; the rest are returned to Spark. `pinned` (`RmqStoreTable`) are
  * pushed and consumed first, whatever the query and `pushdown`. Spark applies a pushed limit again (partial
  * pushdown): the read tasks only stop after that many rows each.
  */
class RmqScanBuilder(schema: StructType, options: RmqOptions, pinned: Array[V2Predicate] = Array.empty)
    extends ScanBuilder with SupportsPushDownV2Filters with SupportsPushDownRequiredColumns
    with SupportsPushDownAggregates with SupportsPushDownLimit {
  private val pinnedConsumed = pinned.flatMap(PredicateTranslator.translate).toIndexedSeq
  private var pushed: Array[V2Predicate] = pinned
  private var consumed: IndexedSeq[Predicate] = pinnedConsumed
  private var required: StructType = schema
  private var limit: Option[Int] = None
  private var answered: Option[(String, Option[AggregateAnswer])] = None
  private var aggregate: Option[AggregateAnswer] = None

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

  /** The metadata answer of `agg`, worked out once per aggregation (Spark asks `supportCompletePushDown` and
    * then `pushAggregation` for the same one).
    */
  private def answer(agg: Aggregation): Option[AggregateAnswer] = {
    val key = (agg.aggregateExpressions.map(_.toString) ++ agg.groupByExpressions.map(_.toString)).mkString("|")
    if (!answered.exists(_._1 == key)) {
      val conf = SparkSession.active.sessionState.newHadoopConfWithOptions(RmqStores.hadoopSettings(options))
      answered = Some((key, MetadataAggregates.answer(agg, consumed, options, conf)))
    }
    answered.get._2
  }

  /** Complete exactly when metadata answers it: the answer's rows are the aggregate's result. */
  override def supportCompletePushDown(agg: Aggregation): Boolean = answer(agg).isDefined

  override def pushAggregation(agg: Aggregation): Boolean = {
    aggregate = answer(agg)
    aggregate.isDefined
  }

  /** Kept with `pushdown` on (off: the plain scan, for comparison). */
  override def pushLimit(n: Int): Boolean = {
    if (options.pushdown) limit = Some(n)
    options.pushdown
  }

  override def build(): Scan = aggregate match {
    case Some(a) => new RmqAggregateScan(a, options, consumed, pushed)
    case None => new RmqScan(required, options, consumed, pushed, limit)
  }
}
