package io.rmqstore.spark.plan

import io.rmqstore.spark.format.MultiDispatch

/** Predicates the planner understands, the model of python/rmqstore/plan/predicates.py:
  * comparisons, IN lists and NOT NULL on table columns, RocketMQ's key meaning (`KeysContainAny`)
  * and resolved queue windows. Values: String for string columns, Long for int/long columns and
  * epoch microseconds (UTC) for timestamps. `AnyOf` is a disjunction of conjunctions (SQL OR),
  * which Spark pushes to DSv2 sources.
  */
sealed trait Predicate extends Serializable

object Predicate {
  sealed trait Op extends Serializable { def symbol: String }
  case object Eq extends Op { val symbol = "=" }
  case object Lt extends Op { val symbol = "<" }
  case object Le extends Op { val symbol = "<=" }
  case object Gt extends Op { val symbol = ">" }
  case object Ge extends Op { val symbol = ">=" }

  /** Columns whose predicates the planner consumes (design §3.1). */
  val PlannableColumns: Set[String] = Set(
    "topic",
    "queueId",
    "queueOffset",
    "commitLogOffset",
    "msgId",
    "uniqKey",
    "key",
    "tags",
    "storeTimestamp"
  )

  /** Columns read by the confirmation of the predicates. */
  def columns(predicates: Seq[Predicate]): Set[String] = predicates.flatMap {
    case c: Compare => Seq(c.column)
    case i: InSet => Seq(i.column)
    case n: NotNull => Seq(n.column)
    case _: KeysContainAny => Seq("keys")
    case q: QueueWindows => Seq("topic", "queueId", "queueOffset", "sysFlag") ++ q.lmq.headOption.map(_ => "properties")
    case a: AnyOf => columns(a.branches.flatten).toSeq
  }.toSet

  /** A short SQL-like text for logs, explain() and error messages. */
  def describe(p: Predicate): String = p match {
    case Compare(c, op, v) => s"$c ${op.symbol} ${literal(v)}"
    case InSet(c, vs) =>
      val shown = vs.take(5).map(literal).mkString(", ")
      s"$c IN ($shown${if (vs.size > 5) s", ... (${vs.size} values)" else ""})"
    case NotNull(c) => s"$c IS NOT NULL"
    case QueueWindows(ws) => s"queue windows (${ws.size} queues)"
    case KeysContainAny(vs) => s"keys contain any of ${vs.map(literal).mkString("[", ", ", "]")}"
    case AnyOf(bs) => bs.map(b => b.map(describe).mkString("(", " AND ", ")")).mkString("(", " OR ", ")")
  }

  private def literal(v: Any): String = v match {
    case s: String => "'" + s.replace("'", "\\'") + "'"
    case other => String.valueOf(other)
  }
}

/** `column op value`. */
final case class Compare(column: String, op: Predicate.Op, value: Any) extends Predicate

/** `column IN (values)`; null values never match (SQL semantics). */
final case class InSet(column: String, values: IndexedSeq[Any]) extends Predicate

/** `column IS NOT NULL`. */
final case class NotNull(column: String) extends Predicate

/** At least one of `values` is among the KEYS tokens (RocketMQ's `queryMsgByKey` meaning). */
final case class KeysContainAny(values: IndexedSeq[String]) extends Predicate

/** Queue offsets [start, end) of one consume queue. */
final case class QueueWindow(topic: String, queueId: Int, start: Long, end: Long) {
  def isLmq: Boolean = topic.startsWith(MultiDispatch.LmqPrefix)
}

/** Queue units (not PREPARED / ROLLBACK records, §4.1) whose (topic, queueId, queueOffset) falls in one of
  * the windows (resolved offsets), or, for the window of an `%LMQ%` queue, whose multi-dispatch properties
  * put them in it (the record keeps its own topic, §4.6).
  */
final case class QueueWindows(windows: IndexedSeq[QueueWindow]) extends Predicate {
  def lmq: IndexedSeq[QueueWindow] = windows.filter(_.isLmq)
}

/** OR of AND-branches, each branch made of pushable predicates. */
final case class AnyOf(branches: IndexedSeq[IndexedSeq[Predicate]]) extends Predicate
