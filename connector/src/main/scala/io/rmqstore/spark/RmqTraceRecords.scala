package io.rmqstore.spark

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.functions.{array_contains, col}

import format.ContractTrace

/** Message-trace records as a DataFrame (docs/format.md §10): python/rmqstore/spark/trace.py `trace_records`,
  * decoded by the same Spark SQL (`ContractTrace`, generated from docs/contract.toml). From spark-shell:
  * {{{
  * io.rmqstore.spark.RmqTraceRecords.frame(spark, java.util.List.of("/data/broker-a"), msgId, null, java.util.Map.of()).show()
  * }}}
  */
object RmqTraceRecords {

  /** The trace records of the stores at `paths` (topic RMQ_SYS_TRACE_TOPIC unless the `topics` option names
    * the trace topics); `msgId` / `key` (null for none) read only the trace messages the index finds by that
    * KEYS token and keep the records whose msgId or offsetMsgId / keys hold it. `options`: the rmqstore
    * table's read options (null for none); `mode` FAILFAST fails on a body that is no trace body, naming its
    * commitLogOffset, PERMISSIVE drops its bad records.
    */
  def frame(
      spark: SparkSession,
      paths: java.util.List[String],
      msgId: String,
      key: String,
      options: java.util.Map[String, String]
  ): DataFrame = {
    val given = Option(options).fold(Map.empty[String, String])(_.asScala.toMap)
    val read = readOptions(given, Option(msgId), Option(key))
    val listed = new ObjectMapper().writeValueAsString(paths.asScala.toArray)
    val mode = RmqOptions.parse((read + (ContractOptions.Name.Paths -> listed)).asJava, requirePath = false).mode
    val table = spark.read.format(classOf[RmqStoreProvider].getName).options(read).load(paths.asScala.toSeq: _*)
    decode(table, mode, Option(msgId), Option(key))
  }

  /** python/rmqstore/spark/trace.py `read_options`: the trace topics and the KEYS token probe. */
  def readOptions(options: Map[String, String], msgId: Option[String], key: Option[String]): Map[String, String] = {
    val read = Map(ContractOptions.Name.Topics -> ContractTrace.DefaultTopic) ++ options
    msgId.orElse(key).fold(read) { probe =>
      read + (ContractOptions.Name.Keys -> new ObjectMapper().writeValueAsString(Array(probe)))
    }
  }

  /** python/rmqstore/spark/trace.py `decode`: the contract's stages, its check for `mode`, the lookups. */
  def decode(table: DataFrame, mode: String, msgId: Option[String], key: Option[String]): DataFrame = {
    val decoded = ContractTrace.Stages.foldLeft(table)((df, stage) => df.selectExpr(stage: _*))
    val check = if (mode == "FAILFAST") ContractTrace.FailfastCheck else ContractTrace.PermissiveCheck
    val records = decoded.where(check).select(ContractTrace.Output.map(col): _*)
    val byId = msgId.fold(records)(id => records.where(col("msgId") === id || col("offsetMsgId") === id))
    key.fold(byId)(k => byId.where(array_contains(col("keys"), k)))
  }
}
