package io.rmqstore.spark

import java.nio.ByteBuffer

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.connector.expressions.{Expression, Expressions, Literal}
import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import format.{Encode, RecordView}
import plan._

/** V2 predicates -> the planner's model, and the confirmation of a decoded record against it. */
class PushdownSuite extends AnyFunSuite {

  /** A literal as Spark hands it over: internal value plus type. */
  private final class LiteralValue[T](v: T, t: DataType) extends Literal[T] {
    override def value(): T = v
    override def dataType(): DataType = t
    override def children(): Array[Expression] = Array.empty
  }
  private def LiteralValue[T](v: T, t: DataType): Expression = new LiteralValue(v, t)
  private def col(name: String): Expression = Expressions.column(name)
  private def str(s: String): Expression = LiteralValue(UTF8String.fromString(s), StringType)
  private def int(i: Int): Expression = LiteralValue(i, IntegerType)
  private def long(l: Long): Expression = LiteralValue(l, LongType)
  private def pred(name: String, children: Expression*): V2Predicate = new V2Predicate(name, children.toArray)

  test("comparisons on plannable columns translate, literal first or last") {
    assert(PredicateTranslator.translate(pred("=", col("key"), str("k1"))) == Some(Compare("key", Predicate.Eq, "k1")))
    assert(PredicateTranslator.translate(pred("<", int(5), col("queueId"))) == Some(Compare(
      "queueId",
      Predicate.Gt,
      5L
    )))
    assert(PredicateTranslator.translate(pred(
      ">=",
      col("storeTimestamp"),
      LiteralValue(1700000000123000L, TimestampType)
    )) == Some(Compare("storeTimestamp", Predicate.Ge, 1700000000123000L)))
    assert(PredicateTranslator.translate(pred("IS_NOT_NULL", col("tags"))) == Some(NotNull("tags")))
  }

  test("what the reader cannot answer exactly stays with Spark") {
    assert(PredicateTranslator.translate(pred("STARTS_WITH", col("key"), str("k"))).isEmpty)
    assert(PredicateTranslator.translate(pred("=", col("body"), str("x"))).isEmpty) // not plannable
    assert(PredicateTranslator.translate(pred("=", col("queueId"), long(5L))).isEmpty) // type differs
    assert(PredicateTranslator.translate(pred("=", col("key"), LiteralValue(null, StringType))).isEmpty)
    assert(PredicateTranslator.translate(pred("IS_NULL", col("key"))).isEmpty)
    val half = pred("OR", pred("=", col("key"), str("a")), pred("STARTS_WITH", col("tags"), str("T")))
    assert(PredicateTranslator.translate(half).isEmpty)
  }

  test("IN drops nulls and duplicates; OR of ANDs becomes AnyOf") {
    val in = pred("IN", col("key"), str("a"), LiteralValue(null, StringType), str("a"), str("b"))
    assert(PredicateTranslator.translate(in) == Some(InSet("key", IndexedSeq("a", "b"))))
    val or = pred(
      "OR",
      pred("=", col("key"), str("a")),
      pred("AND", pred("=", col("topic"), str("T")), pred(">", col("queueOffset"), long(3L)))
    )
    assert(PredicateTranslator.translate(or) == Some(AnyOf(IndexedSeq(
      IndexedSeq(Compare("key", Predicate.Eq, "a")),
      IndexedSeq(Compare("topic", Predicate.Eq, "T"), Compare("queueOffset", Predicate.Gt, 3L))
    ))))
    assert(PredicateTranslator.toV1(or).map(_.toString).contains(
      "Or(EqualTo(key,a),And(EqualTo(topic,T),GreaterThan(queueOffset,3)))"
    ))
  }

  private def view(props: Array[Byte]): RecordView = {
    val bytes = Encode.record(topic = "T", props = props, queueId = 1, queueOffset = 7, phy = 0)
    new RecordView().reset(ByteBuffer.wrap(bytes), 0, 0L)
  }

  test("confirmation: whole KEYS string for key, tokens for KeysContainAny, null never matches") {
    val r = view(Encode.properties("KEYS" -> "k1 k2", "UNIQ_KEY" -> "U1"))
    assert(Confirm.matches(r, Compare("key", Predicate.Eq, "k1 k2")))
    assert(!Confirm.matches(r, Compare("key", Predicate.Eq, "k1")))
    assert(Confirm.matches(r, KeysContainAny(IndexedSeq("x", "k2"))))
    assert(!Confirm.matches(r, NotNull("tags")))
    assert(!Confirm.matches(r, Compare("tags", Predicate.Lt, "zzz")))
    assert(Confirm.matches(r, Compare("storeTimestamp", Predicate.Eq, 1700000000123000L)))
    assert(Confirm.matches(r, QueueWindows(IndexedSeq(QueueWindow("T", 1, 5, 8)))))
    assert(!Confirm.matches(r, QueueWindows(IndexedSeq(QueueWindow("T", 1, 8, 9)))))
    assert(Confirm.matches(
      r,
      AnyOf(IndexedSeq(IndexedSeq(NotNull("tags")), IndexedSeq(InSet("uniqKey", IndexedSeq("U1")))))
    ))
  }

  test("strings compare like Spark's UTF-8 order, also outside the BMP") {
    val r = view(Encode.properties("TAGS" -> "\uD83D\uDE00"))
    assert(Confirm.matches(r, Compare("tags", Predicate.Gt, "\uFFFF"))) // U+1F600 sorts after U+FFFF in UTF-8
  }

  test("options: the Python engine's parsing and wording") {
    def parse(kv: (String, String)*) = RmqOptions.parse(kv.toMap.asJava)
    val o = parse(
      "path" -> "/s/",
      "MAXBYTESPERPARTITION" -> "2m",
      "endingTimestamp" -> "2024-01-01T00:00:00",
      "startingOffsets" -> """{"A":{"0":23,"1":-2}}""",
      "keys" -> """["a,b","c"]"""
    )
    assert(o.maxBytesPerPartition == (2L << 20))
    assert(o.endingTimestamp.contains(1704067200000L))
    assert(o.startingOffsets == OffsetSpec.Queues(Map("A" -> Map(0 -> 23L, 1 -> -2L))))
    assert(o.keys.contains(IndexedSeq("a,b", "c")))
    assert(o.brokerNames == IndexedSeq("/s"))
    val e = intercept[RmqOptionException](parse("path" -> "/s", "startingoffset" -> "earliest"))
    assert(e.getMessage.startsWith("rmqstore option 'startingoffset': unknown option; did you mean 'startingOffsets'?"))
  }
}
