package io.rmqstore.spark

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.{Row, SparkSession}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import format.{ContractTrace, Encode}

/** `RmqTraceRecords.frame` over a commit log of the shared trace vectors (tests/vectors/trace_vectors.json,
  * docs/format.md §10): every record decodes to its vector's columns, a msgId keeps its records, a malformed
  * body fails naming its commitLogOffset.
  */
class TraceRecordsSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val vectors: JsonNode =
    new ObjectMapper().readTree(Paths.get("tests/vectors/trace_vectors.json").toFile)
  private lazy val spark: SparkSession = SparkSession.builder()
    .master("local[1]")
    .appName("TraceRecordsSuite")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .getOrCreate()

  override def beforeAll(): Unit = spark.sparkContext.setLogLevel("WARN")

  override def afterAll(): Unit = spark.stop()

  /** A store of one segment holding each (topic, body, KEYS) as a message (no index files: key lookups read
    * the side index); returns (root, offsets).
    */
  private def store(messages: Seq[(String, String, String)]): (Path, Seq[Long]) = {
    val root = Files.createTempDirectory("rmqstore-trace-suite")
    val segment = ByteBuffer.allocate(64 * 1024)
    val offsets = messages.toList.map {
      case (topic, body, keys) => // strict: each record written before the file
        val at = segment.position().toLong
        val props = Encode.properties("KEYS" -> keys)
        segment.put(Encode.record(topic = topic, body = body.getBytes(UTF_8), props = props, phy = at))
        at
    }
    Files.write(Files.createDirectories(root.resolve("commitlog")).resolve(f"${0}%020d"), segment.array)
    (root, offsets)
  }

  /** A vector as a trace message: its body, KEYS its records' msgIds (`TraceDataEncoder` transKey). */
  private def message(topic: String, vector: JsonNode): (String, String, String) =
    (topic, vector.get("body").asText, vector.get("records").elements.asScala.map(_.get("msgId").asText).mkString(" "))

  private def frame(root: Path, msgId: String = null, options: Map[String, String] = Map.empty) =
    RmqTraceRecords.frame(spark, java.util.Collections.singletonList(root.toString), msgId, null, options.asJava)

  /** The row's value of `column` as the vectors spell it (timestamp in epoch ms), null when null. */
  private def value(row: Row, column: String): Any = row.getAs[Any](column) match {
    case t: java.sql.Timestamp => t.getTime
    case s: scala.collection.Seq[_] => s.mkString(",")
    case v => v
  }

  private def expected(record: JsonNode, column: String): Any = Option(record.get(column)).map { node =>
    if (node.isArray) node.elements.asScala.map(_.asText).mkString(",")
    else if (node.isBoolean) node.asBoolean
    else if (node.isLong || column == "timestamp") node.asLong
    else if (node.isInt) node.asInt
    else node.asText
  }.orNull

  test("every vector's records decode to their columns") {
    val bodies = vectors.get("vectors").elements.asScala.toList
    val (root, offsets) = store(bodies.map(message(ContractTrace.DefaultTopic, _)))
    val rows = frame(root).collect()
    assert(rows.length == bodies.map(_.get("records").size).sum)
    for ((vector, at) <- bodies.zip(offsets); (record, n) <- vector.get("records").elements.asScala.zipWithIndex) {
      val row = rows.find(r => r.getAs[Long]("commitLogOffset") == at && r.getAs[Int]("recordIndex") == n).get
      for (column <- ContractTrace.Columns.map(_(0)))
        assert(value(row, column) == expected(record, column), s"${vector.get("name").asText} $n $column")
      assert(row.getAs[String]("traceTopic") == ContractTrace.DefaultTopic)
    }
    val id = "0A0000011F4A18B4AAC2600000000004"
    assert(frame(root, msgId = id).collect().map(_.getAs[String]("requestId")).sorted.toSeq == Seq("req-3", "req-4"))
  }

  test("a malformed body fails in FAILFAST naming its offset and cause, PERMISSIVE drops it") {
    val malformed = vectors.get("malformed").get(0)
    val (root, offsets) =
      store(Seq(message("T", vectors.get("vectors").get(3)), ("T", malformed.get("body").asText, "")))
    val error = intercept[Exception](frame(root, options = Map("topics" -> "T")).collect())
    assert(error.getMessage.contains(s"trace message at commitLogOffset ${offsets(1)} "), error.getMessage)
    assert(error.getMessage.contains(malformed.get("problem").asText), error.getMessage)
    val kept = frame(root, options = Map("topics" -> "T", "mode" -> "PERMISSIVE")).collect()
    assert(kept.map(_.getAs[Long]("commitLogOffset")).toSeq == Seq(offsets.head))
  }
}
