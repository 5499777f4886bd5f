package io.rmqstore.spark

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.connector.expressions.{Expression, Expressions}
import org.apache.spark.sql.connector.expressions.aggregate.{AggregateFunc, Aggregation, CountStar, Max, Sum}
import org.scalatest.funsuite.AnyFunSuite

import store.Oracle

/** `MetadataAggregates.answer` on conformance fixtures: RocketMQ's counts when it answers, None (Spark scans)
  * where metadata cannot give the scan's answer.
  */
class MetadataAggregatesSuite extends AnyFunSuite {

  private def options(name: String, extra: (String, String)*): RmqOptions =
    RmqOptions.parse((Map("path" -> Oracle.storeDir(name), "verifyCrc" -> "false") ++ extra).asJava)

  private def agg(funcs: Seq[AggregateFunc], groups: String*): Aggregation =
    new Aggregation(funcs.toArray, groups.map(g => Expressions.column(g): Expression).toArray)

  private def answer(name: String, aggregation: Aggregation, extra: (String, String)*): Option[AggregateAnswer] =
    MetadataAggregates.answer(aggregation, Nil, options(name, extra: _*), new Configuration())

  test("count(*), max(queueOffset) GROUP BY topic are RocketMQ's: crash copy, LMQ copies, RocksDB queues") {
    for (name <- Seq("rmq-5.5.0", "rmq-4.9.7-crash", "rmq-5.4.0-lmq", "rmq-5.3.3-rocksdb")) {
      val a = answer(name, agg(Seq(new CountStar(), new Max(Expressions.column("queueOffset"))), "topic")).get
      assert(a.schema.fieldNames.toSeq.head == "topic" && a.schema.size == 3)
      val got = a.rows.map(r => r.getUTF8String(0).toString -> (r.getLong(1), r.getLong(2))).toMap
      val want = Oracle.records(name).groupBy(_.get("topic").asText).map { case (t, rs) =>
        t -> (rs.size.toLong, rs.map(_.get("queueOffset").asLong).max)
      }
      assert(got == want, name)
    }
  }

  test("no answer: verifyCrc on, pushdown off, an aggregate or shape metadata cannot answer, the keys option") {
    val count = agg(Seq(new CountStar()))
    assert(answer("rmq-5.5.0", count).isDefined)
    assert(answer("rmq-5.5.0", count, "verifyCrc" -> "true").isEmpty)
    assert(answer("rmq-5.5.0", count, "pushdown" -> "false").isEmpty)
    assert(answer("rmq-5.5.0", count, "keys" -> "k1").isEmpty)
    assert(answer("rmq-5.5.0", agg(Seq(new Sum(Expressions.column("queueOffset"), false)))).isEmpty)
    assert(answer("rmq-5.5.0", agg(Seq(new CountStar()), "tags")).isEmpty)
    assert(answer("rmq-5.4.0-batchcq", count).isEmpty)
  }
}
