package io.rmqstore.spark

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.scalatest.funsuite.AnyFunSuite

import format.{Compression, Layout, RecordView}
import format.Encode._

/** The writer's byte-level columns against the record's String accessors (RocketMQ's decoding, U+FFFD
  * for malformed UTF-8), row by row, with every column and with subsets in another order.
  */
class ColumnarWriterSuite extends AnyFunSuite {
  private val Ipv6 = Array.tabulate[Byte](16)(i => if (i < 2 || i == 15) (i + 0x20).toByte else 0)
  private val bad = Array[Byte](0xc3.toByte, 'x', 0xed.toByte, 0xa0.toByte, 0x80.toByte)
  private def prop(name: String, value: Array[Byte]) =
    name.getBytes(UTF_8) ++ Array[Byte](Layout.PropertyNameValueSeparator) ++ value :+ Layout.PropertySeparator

  // A record whose topic bytes are `topic` (the encoder takes text: patch a same-length placeholder).
  private def withTopic(topic: Array[Byte], props: Array[Byte], body: Array[Byte] = "b".getBytes(UTF_8)) = {
    val r = record(topic = "t" * topic.length, props = props, body = body)
    val at = new RecordView(ByteBuffer.wrap(r), 0, 0L).topicPosition
    System.arraycopy(topic, 0, r, at, topic.length)
    r
  }

  private val records = Seq(
    record(),
    record(topic = "\u4e3b\u9898", props = properties("KEYS" -> " a  \u5024 ", "x" -> "1", "KEYS" -> "c d")),
    record(props = Array.emptyByteArray, body = Array.emptyByteArray),
    withTopic(bad, prop("KEYS", bad ++ " ok".getBytes(UTF_8)) ++ prop("TAGS", bad) ++ prop("UNIQ_KEY", bad)),
    withTopic("T".getBytes(UTF_8), prop("k" ++ new String(bad, UTF_8), bad) ++ properties("TAGS" -> "\uD83D\uDE00")),
    // IPv6 hosts, then the first record's hosts again: texts built once per distinct host (Hosts.Texts)
    record(bornHost = host(Ipv6, 1), storeHost = host(Ipv6, 2)),
    record(bornHost = host(Ipv6, 1), storeHost = host(Array[Byte](10, 0, 0, 1), 10911)),
    record()
  )

  // The records in buffers of `kind`: "heap" (an array, as positional reads give), "direct" (native memory,
  // as a memory map gives) or "read-only" (a heap buffer hiding its array), each record at position 7.
  private def rows(schema: StructType, kind: String): (ColumnarBatch, Seq[RecordView]) = {
    val writer = new ColumnarWriter(schema, "b1", decompress = true)
    val views = records.map { r =>
      val buf = if (kind == "direct") ByteBuffer.allocateDirect(r.length + 7) else ByteBuffer.allocate(r.length + 7)
      buf.put(7, r)
      val v = new RecordView(if (kind == "read-only") buf.asReadOnlyBuffer else buf, 7, 0L)
      writer.append(v)
      v
    }
    (writer.flush(), views)
  }

  private def check(schema: StructType, kind: String = "heap"): Unit = {
    val (batch, views) = rows(schema, kind)
    assert(batch.numRows == records.size)
    for ((v, row) <- views.zipWithIndex; (f, col) <- schema.fields.zipWithIndex) {
      val c = batch.column(col)
      def str(s: String) =
        if (s == null) assert(c.isNullAt(row), f.name) else assert(c.getUTF8String(row).toString == s)
      f.name match {
        case "topic" => str(v.topic)
        case "key" => str(v.key)
        case "tags" => str(v.tags)
        case "uniqKey" => str(v.uniqKey)
        case "msgId" => str(v.msgId)
        case "bornHost" => str(v.bornHost)
        case "storeHost" => str(v.storeHost)
        case "broker" => str("b1")
        case "body" => assert(c.getBinary(row).toSeq == v.body(decompress = true).toSeq)
        case "keys" =>
          if (v.keys == null) assert(c.isNullAt(row))
          else {
            val a = c.getArray(row)
            assert((0 until a.numElements).map(a.getUTF8String(_).toString) == v.keys.toSeq)
          }
        case "properties" =>
          val m = c.getMap(row)
          val pairs = (0 until m.numElements).map(i =>
            m.keyArray.getUTF8String(i).toString -> m.valueArray.getUTF8String(i).toString
          )
          assert(pairs == v.properties.asScala.toSeq)
        case "queueOffset" | "commitLogOffset" | "preparedTransactionOffset" | "bornTimestamp" | "storeTimestamp" =>
          assert(c.getLong(row) != Long.MinValue)
        case _ => assert(c.getInt(row) != Int.MinValue)
      }
    }
    assert(
      views.exists(_.topic.contains('\uFFFD')) && views.exists(_.properties.asScala.exists(_._2.contains('\uFFFD')))
    )
  }

  test("every column: UTF-8 bytes as RocketMQ decodes them, malformed ones replaced like Java's decoder") {
    check(RmqSchema.Table)
  }

  test("a subset of columns in another order") {
    check(StructType(Seq("properties", "keys", "topic", "body", "tags").map(RmqSchema.field)))
  }

  test("every column from native memory (a memory map's kind of buffer) and from a read-only heap buffer") {
    check(RmqSchema.Table, "direct")
    check(RmqSchema.Table, "read-only")
  }

  test("a compressed body is written decompressed, a stored one as is") {
    val raw = "hello hello hello".getBytes(UTF_8)
    val out = new java.io.ByteArrayOutputStream()
    val z = new java.util.zip.DeflaterOutputStream(out)
    z.write(raw)
    z.close()
    val zipped = record(body = out.toByteArray, sysFlag = Layout.SysFlagCompressed)
    val writer = new ColumnarWriter(StructType(Seq(RmqSchema.field("body"))), "b", decompress = true)
    writer.append(new RecordView(ByteBuffer.wrap(zipped), 0, 0L))
    writer.append(new RecordView(ByteBuffer.wrap(record(body = raw)), 0, 0L))
    val batch = writer.flush()
    assert(Compression.applies(Layout.SysFlagCompressed, 1) && !Compression.applies(Layout.SysFlagCompressed, 0))
    assert(batch.column(0).getBinary(0).toSeq == raw.toSeq && batch.column(0).getBinary(1).toSeq == raw.toSeq)
  }

  test("batches past the initial capacity, and nulls cleared by reset") {
    val writer = new ColumnarWriter(StructType(Seq("key", "queueOffset").map(RmqSchema.field)), "b", decompress = true)
    val n = 3 * ColumnarWriter.InitialRows + 1
    for (i <- 0 until n) {
      val props = if (i % 2 == 0) properties("KEYS" -> s"k$i") else Array.emptyByteArray
      writer.append(new RecordView(ByteBuffer.wrap(record(props = props, queueOffset = i.toLong)), 0, 0L))
    }
    val batch = writer.flush()
    assert(batch.numRows == n)
    for (i <- 0 until n) {
      assert(batch.column(1).getLong(i) == i)
      if (i % 2 == 0) assert(batch.column(0).getUTF8String(i).toString == s"k$i")
      else assert(batch.column(0).isNullAt(i))
    }
    writer.reset()
    writer.append(new RecordView(ByteBuffer.wrap(record(props = Array.emptyByteArray)), 0, 0L))
    writer.append(new RecordView(ByteBuffer.wrap(record(props = properties("KEYS" -> "x"))), 0, 0L))
    val next = writer.flush()
    assert(next.numRows == 2 && next.column(0).isNullAt(0) && next.column(0).getUTF8String(1).toString == "x")
  }
}
