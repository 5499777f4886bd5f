package io.rmqstore.examples

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.col

/** A key lookup and a count by topic with the JVM connector, for JVM users of spark-submit:
  * {{{
  * spark-submit --packages io.rmqstore:rmqstore-spark-4.0_2.13:0.1.0-SNAPSHOT \
  *   --class io.rmqstore.examples.KeyLookup examples/target/scala-2.13/rmqstore-examples_2.13-0.1.0-SNAPSHOT.jar \
  *   <store> [key]
  * }}}
  * The `keys` option finds messages having the key among their keys (RocketMQ's meaning); `key = v`
  * compares the whole KEYS property. Both reach the source (see PushedFilters in the formatted plan),
  * which returns only the records it confirmed.
  */
object KeyLookup {

  def main(args: Array[String]): Unit = {
    if (args.isEmpty || args.length > 2) {
      System.err.println("usage: KeyLookup <store> [key]")
      sys.exit(2)
    }
    val store = args(0)
    val key = if (args.length > 1) args(1) else "order-32" // an order and its payment in the demo store (rmqstore demo)
    val spark = SparkSession.builder().appName("rmqstore key lookup").getOrCreate()
    try {
      val messages = spark.read.format("rmqstore").load(store)

      val columns = Seq("topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "key")

      // Messages having `key` among their keys (RocketMQ's meaning).
      println(s"messages having '$key' among their keys:")
      spark.read
        .format("rmqstore")
        .option("keys", key)
        .load(store)
        .select(columns.map(col): _*)
        .show(truncate = false)

      // `key = v` compares the whole KEYS string; the plan shows the filter pushed to the source.
      val exact = messages.where(col("key") === key).select(columns.map(col): _*)
      exact.explain("formatted")
      println(s"key = '$key' (whole KEYS string):")
      exact.show(truncate = false)

      println("messages by topic:")
      messages.groupBy("topic").count().orderBy("topic").show(truncate = false)
    } finally spark.stop()
  }
}
