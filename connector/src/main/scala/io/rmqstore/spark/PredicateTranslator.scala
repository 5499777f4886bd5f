package io.rmqstore.spark

import org.apache.spark.sql.connector.expressions.{Literal, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.sources
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import plan.{AnyOf, Compare, InSet, NotNull, Predicate}

/** Spark V2 predicates -> planner predicates (the model of python/rmqstore/spark/filters.py).
  *
  * Translated, hence consumed, are only predicates the reader answers exactly (design §3): =, <=> with a
  * non-null value, IN, <, <=, >, >=, IS NOT NULL on the plannable columns, and AND / OR made of such
  * predicates. Everything else (STARTS_WITH, NOT, IS NULL, other columns, casts) stays with Spark.
  * Literals are Spark's internal values: UTF8String for strings, Int/Long for numbers, Long µs (UTC)
  * for timestamps.
  */
object PredicateTranslator {
  private val flipped = Map("<" -> ">", "<=" -> ">=", ">" -> "<", ">=" -> "<=", "=" -> "=", "<=>" -> "<=>")
  private val ops = Map(
    "=" -> Predicate.Eq,
    "<=>" -> Predicate.Eq,
    "<" -> Predicate.Lt,
    "<=" -> Predicate.Le,
    ">" -> Predicate.Gt,
    ">=" -> Predicate.Ge
  )

  /** The planner predicate for one Spark predicate, or None when it must stay with Spark. */
  def translate(p: V2Predicate): Option[Predicate] = p.name match {
    case "IS_NOT_NULL" => column(p.children()(0)).map(NotNull)
    case "IN" =>
      column(p.children()(0)).flatMap { c =>
        val values = p.children().drop(1).toSeq.map(literal(c, _))
        if (values.isEmpty || values.exists(_.isEmpty)) None
        else {
          val kept = values.flatten.filter(_ != null).distinct
          if (kept.isEmpty) None else Some(InSet(c, kept.toIndexedSeq))
        }
      }
    case "AND" => conjuncts(p).map(cs => if (cs.size == 1) cs.head else AnyOf(IndexedSeq(cs)))
    case "OR" =>
      val branches = p.children().toSeq.map {
        case child: V2Predicate if child.name == "OR" => translate(child).collect { case AnyOf(bs) => bs }
        case child: V2Predicate => conjuncts(child).map(IndexedSeq(_))
        case _ => None
      }
      if (branches.exists(_.isEmpty)) None else Some(AnyOf(branches.flatMap(_.get).toIndexedSeq))
    case name if ops.contains(name) =>
      val (left, right) = (p.children()(0), p.children()(1))
      val (ref, lit, op) =
        if (column(left).isDefined) (left, right, name) else (right, left, flipped(name))
      for {
        c <- column(ref)
        v <- literal(c, lit)
        if v != null
      } yield Compare(c, ops(op), v)
    case _ => None
  }

  /** The predicates of a conjunction (nested ANDs flattened), None unless every part translates. */
  private def conjuncts(p: V2Predicate): Option[IndexedSeq[Predicate]] =
    if (p.name == "AND") {
      val parts = p.children().toSeq.map {
        case child: V2Predicate => conjuncts(child)
        case _ => None
      }
      if (parts.exists(_.isEmpty)) None else Some(parts.flatMap(_.get).toIndexedSeq)
    } else translate(p).map(IndexedSeq(_))

  private def column(e: org.apache.spark.sql.connector.expressions.Expression): Option[String] = e match {
    case ref: NamedReference if ref.fieldNames().length == 1 && Predicate.PlannableColumns(ref.fieldNames()(0)) =>
      Some(ref.fieldNames()(0))
    case _ => None
  }

  /** A literal as the planner's value for `column` (Some(null) for a null literal), None when its type
    * does not fit the column.
    */
  private def literal(column: String, e: org.apache.spark.sql.connector.expressions.Expression): Option[Any] =
    e match {
      case lit: Literal[_] =>
        (RmqSchema.field(column).dataType, lit.dataType(), lit.value()) match {
          case (_, _, null) => Some(null)
          case (StringType, StringType, s: UTF8String) => Some(s.toString)
          case (IntegerType, IntegerType, i: java.lang.Integer) => Some(i.longValue)
          case (LongType, LongType | IntegerType, n: java.lang.Number) => Some(n.longValue)
          case (TimestampType, TimestampType, micros: java.lang.Long) => Some(micros.longValue)
          case _ => None
        }
      case _ => None
    }

  /** A consumed predicate as the V1 `Filter` Spark prints for Python sources ("EqualTo(key,k2)"), so
    * explain() shows the same PushedFilters on both engines; None for shapes V1 lacks.
    */
  def toV1(p: V2Predicate): Option[sources.Filter] = {
    def ref(e: org.apache.spark.sql.connector.expressions.Expression) = e match {
      case r: NamedReference => Some(r.fieldNames().mkString("."))
      case _ => None
    }
    def value(e: org.apache.spark.sql.connector.expressions.Expression): Option[Any] = e match {
      case lit: Literal[_] =>
        Some((lit.dataType(), lit.value()) match {
          case (_, null) => null
          case (TimestampType, micros: java.lang.Long) =>
            val ts = new java.sql.Timestamp(Math.floorDiv(micros.longValue, 1000L))
            ts.setNanos((Math.floorMod(micros.longValue, 1000000L) * 1000L).toInt)
            ts
          case (_, s: UTF8String) => s.toString
          case (_, v) => v
        })
      case _ => None
    }
    def child(i: Int) = p.children()(i) match {
      case pred: V2Predicate => toV1(pred)
      case _ => None
    }
    val c = p.children()
    p.name match {
      case "IS_NOT_NULL" => ref(c(0)).map(sources.IsNotNull)
      case "IN" => ref(c(0)).flatMap(r =>
          c.drop(1).toSeq.map(value) match {
            case vs if vs.forall(_.isDefined) => Some(sources.In(r, vs.flatten.toArray))
            case _ => None
          }
        )
      case "AND" => for (l <- child(0); r <- child(1)) yield sources.And(l, r)
      case "OR" => for (l <- child(0); r <- child(1)) yield sources.Or(l, r)
      case op if ops.contains(op) =>
        for (r <- ref(c(0)); v <- value(c(1))) yield op match {
          case "=" => sources.EqualTo(r, v)
          case "<=>" => sources.EqualNullSafe(r, v)
          case "<" => sources.LessThan(r, v)
          case "<=" => sources.LessThanOrEqual(r, v)
          case ">" => sources.GreaterThan(r, v)
          case ">=" => sources.GreaterThanOrEqual(r, v)
        }
      case _ => None
    }
  }
}
