package io.rmqstore.spark

import java.sql.Timestamp

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.types._

import plan.{Lag, QueueLag}
import store.StoreException

/** Consumer lag as a DataFrame (design §10), one row per (group, topic, queue): python/rmqstore/spark/lag.py
  * `lag`, with the same schema. From spark-shell:
  * {{{
  * io.rmqstore.spark.RmqLag.frame(spark, java.util.Map.of("path", "/data/broker-a"), "cg-analytics", null).show()
  * }}}
  */
object RmqLag {
  val Schema: StructType = StructType(
    Seq(
      StructField("group", StringType),
      StructField("topic", StringType),
      StructField("queueId", IntegerType),
      StructField("state", StringType),
      StructField("committedOffset", LongType),
      StructField("minOffset", LongType),
      StructField("maxOffset", LongType),
      StructField("lagMessages", LongType),
      StructField("lagBytes", LongType),
      StructField("oldestStoreTimestamp", TimestampType),
      StructField("lagMs", LongType),
      StructField("logEndTimestamp", TimestampType)
    )
  )

  /** The lag of `group`'s queues (every group's when null), of `topic` only when not null, in the store the
    * read options name (`path` and what opens it: s3.*, index geometry; one store).
    */
  def frame(spark: SparkSession, options: java.util.Map[String, String], group: String, topic: String): DataFrame = {
    val parsed = RmqOptions.parse(options)
    if (parsed.paths.size != 1)
      throw new RmqOptionException("path", s"lag reads one store at a time, got ${parsed.paths.size}")
    val conf = spark.sessionState.newHadoopConfWithOptions(RmqStores.hadoopSettings(parsed))
    val store = RmqStores.open(parsed, parsed.paths.head, conf)
    val (end, lags) =
      try Lag(store, Option(group), Option(topic))
      catch { case e: StoreException => throw new IllegalArgumentException(e.getMessage, e) } // as getTable
      finally store.close()
    spark.createDataFrame(lags.map(row(_, end)).asJava, Schema)
  }

  private def row(lag: QueueLag, end: Option[Long]): Row = {
    def time(ms: Option[Long]) = ms.map(new Timestamp(_)).orNull
    def long(v: Option[Long]) = v.map(Long.box).orNull
    Row(
      lag.group,
      lag.topic,
      lag.queueId,
      lag.state,
      long(lag.committedOffset),
      lag.minOffset,
      lag.maxOffset,
      long(lag.messages),
      long(lag.bytes),
      time(lag.oldestStoreTime),
      long(lag.ageMs),
      time(end)
    )
  }
}
