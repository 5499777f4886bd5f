package io.rmqstore.spark

import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.{AnalysisException, DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.analysis.{NoSuchNamespaceException, NoSuchTableException}
import org.apache.spark.sql.execution.FormattedMode
import org.apache.spark.sql.functions.{col, struct, to_json}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import store.Oracle

/** `RmqCatalog` over a conformance fixture written by RocketMQ: its listing is RocketMQ's topics, and a topic
  * table reads, pushes and touches what the source filtered on the topic does.
  */
class CatalogSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val fixture = "rmq-5.5.0"
  private val path = Oracle.storeDir(fixture)
  private val stats: Path = Files.createTempDirectory("rmqstore-catalog-stats")
  private lazy val spark: SparkSession = SparkSession.builder()
    .master("local[1]")
    .appName("CatalogSuite")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.catalog.rmq", classOf[RmqCatalog].getName)
    .config("spark.sql.catalog.rmq.store.broker_a", path)
    .config("spark.sql.catalog.rmqstats", classOf[RmqCatalog].getName)
    .config("spark.sql.catalog.rmqstats.store.broker_a", path)
    .config("spark.sql.catalog.rmqstats.statsDir", stats.resolve("catalog").toString)
    .getOrCreate()

  override def beforeAll(): Unit = spark.sparkContext.setLogLevel("WARN")

  override def afterAll(): Unit = spark.stop()

  private def direct(statsDir: Option[String] = None): DataFrame = {
    val reader = spark.read.format(classOf[RmqStoreProvider].getName)
    statsDir.fold(reader)(reader.option("statsDir", _)).load(path)
  }

  private def rowsOf(df: DataFrame): Seq[String] =
    df.select(to_json(struct(col("*")))).collect().map(_.getString(0)).sorted.toSeq

  private def pushedFilters(df: DataFrame): String = {
    val plan = df.queryExecution.explainString(FormattedMode)
    "PushedFilters: \\[[^\\n]*\\]".r.findFirstIn(plan).getOrElse(fail(s"no PushedFilters in\n$plan"))
  }

  test("stores are namespaces; a store's tables are RocketMQ's topics and _all") {
    assert(spark.sql("SHOW NAMESPACES IN rmq").collect().map(_.getString(0)).toSeq == Seq("broker_a"))
    val oracleTopics = Oracle.all(fixture).get("queues").asScala.map(_.get("topic").asText).toSeq.distinct.sorted
    val tables = spark.sql("SHOW TABLES IN rmq.broker_a").collect().map(_.getAs[String]("tableName")).toSeq
    assert(tables == RmqCatalog.AllTopics +: oracleTopics)
    assert(spark.table("rmq.broker_a.TopicTest").schema == RmqSchema.Table)
  }

  test("a topic table is the source filtered on the topic, with the topic pushed") {
    for (topic <- Seq("TopicTest", "%RETRY%consumer-group")) {
      val viaCatalog = spark.table(s"rmq.broker_a.`$topic`")
      val filtered = direct().where(col("topic") === topic)
      assert(rowsOf(viaCatalog) == rowsOf(filtered))
      assert(rowsOf(viaCatalog).size == Oracle.records(fixture).count(_.get("topic").asText == topic))
      assert(pushedFilters(viaCatalog).contains(s"EqualTo(topic,$topic)"))
    }
    assert(rowsOf(spark.table("rmq.broker_a._all")) == rowsOf(direct()))
  }

  test("a key lookup through the catalog pushes and reads what the direct read does") {
    val directStats = stats.resolve("direct").toString
    val viaCatalog = spark.sql("SELECT * FROM rmqstats.broker_a.TopicTest WHERE key = 'Aa'")
    val filtered = direct(Some(directStats)).where(col("topic") === "TopicTest" && col("key") === "Aa")
    val rows = rowsOf(viaCatalog)
    assert(rows.size == 2 && rows == rowsOf(filtered))
    for (pushed <- Seq("EqualTo(topic,TopicTest)", "EqualTo(key,Aa)"))
      assert(pushedFilters(viaCatalog).contains(pushed) && pushedFilters(filtered).contains(pushed), pushed)
    val touched = readStats(stats.resolve("catalog"))
    assert(touched("rows") == 2L && touched("access").toString.contains("key-index"), touched)
    assert(touched == readStats(Path.of(directStats)))
  }

  /** What the reads logged to a statsDir touched: access paths, tasks, index probes, bytes and records read. */
  private def readStats(dir: Path): Map[String, Any] = {
    val mapper = new ObjectMapper()
    val lines = Files.list(dir).iterator.asScala.toSeq.flatMap(Files.readAllLines(_).asScala).map(mapper.readTree)
    val (plans, reads) = lines.partition(_.get("event").asText == "plan")
    def sum(field: String) = reads.map(_.get(field).asLong).sum
    Map(
      "access" -> plans.map(_.get("access").toString),
      "tasks" -> plans.map(_.get("tasks").asInt),
      "planProbes" -> plans.map(_.get("index_probes").asLong),
      "probes" -> sum("index_probes"),
      "bytes" -> sum("bytes_read"),
      "decoded" -> sum("records_decoded"),
      "rows" -> sum("rows")
    )
  }

  test("unknown stores and topics are Spark's not-found errors; the catalog is read-only") {
    val catalog = spark.sessionState.catalogManager.catalog("rmq").asInstanceOf[RmqCatalog]
    intercept[NoSuchNamespaceException](catalog.listTables(Array("broker_b")))
    intercept[NoSuchTableException](catalog.loadTable(org.apache.spark.sql.connector.catalog.Identifier.of(
      Array("broker_a"),
      "NoSuchTopic"
    )))
    val missing = intercept[AnalysisException](spark.table("rmq.broker_a.NoSuchTopic"))
    assert(missing.getErrorClass == "TABLE_OR_VIEW_NOT_FOUND")
    for (
      (statement, condition) <- Seq(
        "CREATE TABLE rmq.broker_a.t (x INT)" -> "UNSUPPORTED_FEATURE.TABLE_OPERATION",
        "DROP TABLE rmq.broker_a.TopicTest" -> "UNSUPPORTED_FEATURE.TABLE_OPERATION",
        "CREATE NAMESPACE rmq.broker_b" -> "UNSUPPORTED_FEATURE.CATALOG_OPERATION"
      )
    ) assert(intercept[AnalysisException](spark.sql(statement)).getErrorClass == condition, statement)
  }

  test("store paths come only from store.<name>; a store's options need its path; options are checked") {
    def initialize(options: (String, String)*): String = intercept[IllegalArgumentException] {
      new RmqCatalog().initialize("rmqx", new CaseInsensitiveStringMap(options.toMap.asJava))
    }.getMessage
    assert(initialize("path" -> path).contains("option 'path' is not a catalog option"))
    assert(initialize("store.a" -> path, "store.a.paths" -> path).contains("option 'paths' is not a catalog option"))
    assert(initialize("store.a.statsDir" -> "/tmp").contains("names store 'a', which has no path"))
    assert(initialize("store.a" -> path, "mxaMessageSize" -> "1").startsWith("rmqstore option 'mxaMessageSize'"))
  }
}
