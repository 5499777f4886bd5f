package io.rmqstore.spark

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.expressions.NamedReference
import org.apache.spark.sql.connector.expressions.aggregate.{AggregateFunc, Aggregation, Count, CountStar, Max, Min}
import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

import plan.{AnyOf, Compare, Confirm, InSet, NotNull, Predicate}
import store.{Shape, Store, Tally}

/** An aggregate answered from the stores' metadata: its rows (group columns, then one value per aggregate, the
  * order Spark expects of a pushed aggregation), their schema, and what answering read of the commit logs.
  */
final case class AggregateAnswer(
    schema: StructType,
    rows: Array[InternalRow],
    pushed: String,
    bytesRead: Long,
    recordsRead: Long
)

/** `count(*)`, `count(col)` of a column never null, `min` / `max` of `queueOffset` / `commitLogOffset` grouped by
  * any of `topic`, `queueId`, `broker`, and `min` / `max` of `storeTimestamp` ungrouped, over rows restricted by
  * pushed predicates on `topic`, `queueId`, `queueOffset`, `commitLogOffset` and `storeTimestamp`, answered from
  * consume-queue units, coverage (design §3.2) and time summaries (design §3.5) without reading the records units
  * point to (README "Pushdown", issue #20 item 4). `answer` gives None whenever that answer might differ from a
  * scan's: then Spark scans.
  */
object MetadataAggregates {

  private val GroupColumns = Set("topic", "queueId", RmqSchema.Broker)
  private val OffsetColumns = Set("queueOffset", "commitLogOffset")
  private val Time = "storeTimestamp"

  /** Columns no row has null in: their count is the row count. */
  private val NonNullColumns = Set(
    "topic",
    "queueId",
    "queueOffset",
    "commitLogOffset",
    "storeSize",
    "msgId",
    "bodyCrc",
    "flag",
    "sysFlag",
    "bornTimestamp",
    "storeTimestamp",
    "reconsumeTimes",
    "preparedTransactionOffset",
    RmqSchema.Broker
  )

  /** Shapes where a unit is not one row: BatchCQ units (§4.5), compacted topics. */
  private val RefusedShapes = Seq(Shape.BatchConsumeQueue, Shape.Compaction)

  /** The answer of `agg` over the stores of `options` restricted by `consumed`, None when metadata cannot give
    * exactly the scan's answer: `verifyCrc` on (a scan checks every body: a corrupt one must fail or be skipped,
    * docs/damage.md §1), an aggregate, group or predicate outside the list above, a refused shape, or damage in
    * the bytes no unit covers (the scan fails or skips it).
    */
  def answer(
      agg: Aggregation,
      consumed: Seq[Predicate],
      options: RmqOptions,
      conf: Configuration
  ): Option[AggregateAnswer] = {
    if (!options.pushdown || options.verifyCrc) return None
    val groups = agg.groupByExpressions.toSeq.map(column)
    val funcs = agg.aggregateExpressions.toSeq
    if (!groups.forall(_.exists(GroupColumns))) return None
    val names = groups.flatten
    val kinds = funcs.map(kind(_, grouped = names.nonEmpty))
    if (kinds.exists(_.isEmpty)) return None
    val needsTime = kinds.flatten.exists(_._2 == Time)
    try {
      val perStore = options.paths.indices.map { i =>
        val store = RmqStores.open(options, options.paths(i), conf)
        try tallies(store, consumed ++ OptionPredicates.forStore(options, store), needsTime)
        finally store.close()
      }
      if (perStore.exists(_.isEmpty)) return None
      Some(rows(names, kinds.flatten, perStore.map(_.get), options.brokerNames, funcs))
    } catch { case NonFatal(_) => None } // the scan meets the same problem and reports it
  }

  /** One store's tallies per (topic, queueId), the time span of its records when asked, and the commit-log
    * (bytes, records) read; None when its shape or predicates are not answerable.
    */
  private def tallies(store: Store, predicates: Seq[Predicate], needsTime: Boolean): Option[StoreTallies] = {
    if (RefusedShapes.exists(store.shape.get(_).isDefined)) return None
    val (window, rest) = predicates.partition {
      case Compare(Time, _, _) => true
      case _ => false
    }
    if (!rest.forall(supported) || (needsTime && predicates.nonEmpty)) return None
    val ranges = window.map(_.asInstanceOf[Compare]).foldLeft((Long.MinValue, Long.MaxValue))(narrow) match {
      case (Long.MinValue, Long.MaxValue) => IndexedSeq((store.minOffset, store.logEnd))
      case (begin, end) =>
        val reached = store.timeRuns.filter(r => r.firstMs <= end && r.lastMs >= begin)
        // an unordered run (a jittering clock, design §3.5) is taken whole: exact only inside the window
        if (reached.exists(r => !r.ordered && (r.firstMs < begin || r.lastMs > end))) return None
        if (begin > end) IndexedSeq.empty else store.timeRanges(begin, end).toIndexedSeq
    }
    val keep: (String, Int, Long, Long) => Boolean = (t, q, qo, phy) => rest.forall(matches(_, t, q, qo, phy))
    // on topic and queue id alone, the kept tallies of every queue (`Census.whole`) are selected whole
    val perQueue = window.isEmpty && rest.forall {
      case NotNull(_) => true
      case p => Predicate.columns(Seq(p)).subsetOf(QueueColumns)
    }
    val counted =
      if (perQueue) store.census.whole().map { case (all, stats) =>
        (all.filter(t => keep(t._1._1, t._1._2, 0, 0)), stats)
      }
      else store.census.tally(keep, ranges)
    counted.map { case (byQueue, stats) =>
      val runs = if (needsTime) store.timeRuns else IndexedSeq.empty
      val span = if (runs.isEmpty) None else Some((runs.map(_.firstMs).min, runs.map(_.lastMs).max))
      StoreTallies(byQueue, span, stats.bytesRead, stats.records)
    }
  }

  private final case class StoreTallies(
      byQueue: Map[(String, Int), Tally],
      timeSpan: Option[(Long, Long)],
      bytesRead: Long,
      recordsRead: Long
  )

  /** Inclusive store-time bounds in ms narrowed by `c` (values are epoch microseconds, `Predicates.scala`). */
  private def narrow(bounds: (Long, Long), c: Compare): (Long, Long) = {
    val us = c.value.asInstanceOf[Long]
    val (lo, hi) = (Math.floorDiv(us, 1000L), Math.floorDiv(us + 999L, 1000L)) // ms at or below / at or above
    val (begin, end) = c.op match {
      case Predicate.Ge => (hi, Long.MaxValue)
      case Predicate.Gt => (lo + 1, Long.MaxValue)
      case Predicate.Le => (Long.MinValue, lo)
      case Predicate.Lt => (Long.MinValue, hi - 1)
      case Predicate.Eq => if (lo == hi) (lo, lo) else (1L, 0L) // a time between two milliseconds: none
    }
    (math.max(bounds._1, begin), math.min(bounds._2, end))
  }

  /** Predicates on the columns every unit tells (its queue's topic and id, its queue and physical offset), and
    * NOT NULL of a column never null.
    */
  private def supported(p: Predicate): Boolean = p match {
    case Compare(c, _, _) => UnitColumns(c)
    case InSet(c, _) => UnitColumns(c)
    case NotNull(c) => NonNullColumns(c)
    case AnyOf(branches) => branches.flatten.forall(supported)
    case _ => false
  }

  private val QueueColumns = Set("topic", "queueId")
  private val UnitColumns = QueueColumns ++ Set("queueOffset", "commitLogOffset")

  private def matches(p: Predicate, topic: String, queueId: Int, queueOffset: Long, phy: Long): Boolean = {
    def value(c: String): Any = c match {
      case "topic" => topic
      case "queueId" => queueId.toLong
      case "queueOffset" => queueOffset
      case _ => phy
    }
    p match {
      case Compare(c, op, v) => Confirm.compare(value(c), v, op)
      case InSet(c, vs) => vs.contains(value(c))
      case NotNull(_) => true
      case AnyOf(branches) => branches.exists(_.forall(matches(_, topic, queueId, queueOffset, phy)))
      case _ => false
    }
  }

  /** A column reference's name, None for any other expression. */
  private def column(e: org.apache.spark.sql.connector.expressions.Expression): Option[String] = e match {
    case r: NamedReference if r.fieldNames.length == 1 => Some(r.fieldNames.head)
    case _ => None
  }

  /** ("count" | "min" | "max", column) of an aggregate metadata answers; time only ungrouped. */
  private def kind(f: AggregateFunc, grouped: Boolean): Option[(String, String)] = f match {
    case _: CountStar => Some(("count", ""))
    case c: Count if !c.isDistinct => column(c.column).filter(NonNullColumns).map(("count", _))
    case m: Min => column(m.column).filter(c => OffsetColumns(c) || (c == Time && !grouped)).map(("min", _))
    case m: Max => column(m.column).filter(c => OffsetColumns(c) || (c == Time && !grouped)).map(("max", _))
    case _ => None
  }

  /** The answer's rows: one per group with rows (one row without groups, null extremes when empty). */
  private def rows(
      groups: Seq[String],
      kinds: Seq[(String, String)],
      stores: Seq[StoreTallies],
      brokers: IndexedSeq[String],
      funcs: Seq[AggregateFunc]
  ): AggregateAnswer = {
    val merged = scala.collection.mutable.LinkedHashMap.empty[Seq[Any], Tally]
    for ((s, i) <- stores.zipWithIndex; ((topic, queueId), tally) <- s.byQueue.toSeq.sortBy(_._1)) {
      val key = groups.map {
        case "topic" => UTF8String.fromString(topic)
        case "queueId" => queueId
        case _ => UTF8String.fromString(brokers(i))
      }
      merged.getOrElseUpdate(key, new Tally).merge(tally)
    }
    if (groups.isEmpty && merged.isEmpty) merged(Seq.empty) = new Tally
    val spans = stores.flatMap(_.timeSpan)
    val out = merged.toSeq.map { case (key, t) =>
      val values = kinds.map {
        case ("count", _) => t.count
        case _ if t.count == 0 => null
        case ("min", "queueOffset") => t.minQueueOffset
        case ("max", "queueOffset") => t.maxQueueOffset
        case ("min", "commitLogOffset") => t.minPhyOffset
        case ("max", "commitLogOffset") => t.maxPhyOffset
        case ("min", _) => spans.map(_._1).min * 1000L
        case (_, _) => spans.map(_._2).max * 1000L
      }
      InternalRow.fromSeq(key ++ values): InternalRow
    }
    val fields = groups.map(g => RmqSchema.field(g)) ++ kinds.zip(funcs).map { case ((k, c), f) =>
      // a count is never null, an extreme of no rows is (as Spark's own aggregates declare them)
      if (k == "count") StructField(f.toString, LongType, nullable = false)
      else StructField(f.toString, RmqSchema.field(c).dataType)
    }
    AggregateAnswer(
      StructType(fields),
      out.toArray,
      (funcs.map(_.toString) ++ groups.map("GROUP BY " + _)).mkString("[", ", ", "]"),
      stores.map(_.bytesRead).sum,
      stores.map(_.recordsRead).sum
    )
  }
}
