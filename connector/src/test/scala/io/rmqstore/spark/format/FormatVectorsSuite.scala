package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Paths

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.Encode._

/** The verified vectors of docs/format.md (§8) and the byte rules of §2-§5. The vectors are
  * tests/vectors/format_vectors.json, which the Python format tests read too.
  */
class FormatVectorsSuite extends AnyFunSuite {
  private val Vectors: JsonNode = new ObjectMapper().readTree(Paths.get(FormatVectorsSuite.File).toFile)
  private def items(name: String): Seq[JsonNode] = Vectors.get(name).elements().asScala.toSeq
  private val Record = Vectors.get("record")
  private val Decoded = Record.get("decoded")
  // §8.2: the example record, full hex.
  private val ExampleHex = Record.get("hex").asText
  private val Uniq = Decoded.get("uniqKey").asText
  private def example: ByteBuffer = ByteBuffer.wrap(hex(ExampleHex))

  test("§8.1 hashes, key hashes and slots (non-BMP and MIN_VALUE included)") {
    val vectors = items("hashes")
    assert(vectors.size == 7)
    for (v <- vectors) {
      val (key, hash) = (v.get("key").asText, v.get("java_hash").asInt)
      assert(JavaHash.stringHash(key) == hash, key)
      val keyHash = JavaHash.indexKeyHash(key)
      assert(keyHash == (if (hash == Int.MinValue) 0 else math.abs(hash)), key)
      assert(keyHash == v.get("key_hash").asInt, key)
      assert(keyHash % IndexFile.DefaultHashSlots == v.get("slot_default").asInt, key)
      assert(
        IndexFile.HeaderSize + IndexFile.SlotSize * (keyHash % IndexFile.DefaultHashSlots) == v.get("slot_pos").asInt
      )
      assert(keyHash % 100 == v.get("slot_100").asInt, key)
    }
    for (v <- items("tags_codes")) {
      val code = JavaHash.tagsCode(v.get("tags").asText)
      assert(code == v.get("code").asLong, v)
      assert(toHex(ByteBuffer.allocate(8).putLong(code).array()) == v.get("unit_hex").asText, v)
    }
    assert(JavaHash.tagsCode(null) == 0L)
  }

  test("§8.2 the example record: the encoder's bytes, every field, msgId") {
    val fields = Record.get("fields")
    def field(name: String) = fields.get(name)
    val pairs = field("properties").elements().asScala.map(p => p.get(0).asText -> p.get(1).asText).toSeq
    val props = properties(pairs: _*)
    assert(toHex(record(props = props)) == ExampleHex)
    val size = Decoded.get("storeSize").asInt
    assert(RecordCheck.check(example, 0, size, verifyCrc = true, 0L) == size)
    val v = new RecordView(example, 0, 0L)
    def decoded(name: String) = Decoded.get(name)
    assert(v.totalSize == size && v.magic == Layout.MagicV1 && v.bodyCrc == decoded("bodyCrc").asInt)
    assert(v.queueId == field("queue_id").asInt && v.flag == decoded("flag").asInt)
    assert(v.queueOffset == field("queue_offset").asLong && v.sysFlag == decoded("sysFlag").asInt)
    assert(v.bornTimestampMs == field("born_timestamp").asLong && v.storeTimestampMs == field("store_timestamp").asLong)
    assert(v.bornHost == field("born_host").asText && v.storeHost == field("store_host").asText)
    assert(v.reconsumeTimes == decoded("reconsumeTimes").asInt)
    assert(v.preparedTransactionOffset == decoded("preparedTransactionOffset").asLong)
    val body = field("body").asText
    assert(new String(v.body(decompress = true), UTF_8) == body && v.bodyLength == body.length)
    assert(v.topic == field("topic").asText && v.topicPosition == decoded("topicPosition").asInt)
    assert(v.topicLength == decoded("topicLength").asInt)
    assert(v.propertiesPosition == decoded("propertiesPosition").asInt)
    assert(v.propertiesLength == decoded("propertiesLength").asInt)
    assert(v.key == decoded("key").asText && v.tags == decoded("tags").asText && v.uniqKey == Uniq)
    assert(v.keys.toSeq == decoded("keys").elements().asScala.map(_.asText).toSeq)
    assert(v.properties.asScala == pairs.toMap)
    assert(v.msgId == decoded("msgId").asText)
    assert(MsgId.decode(decoded("msgId").asText.toLowerCase).contains(("127.0.0.1:10911", 0L)))
    assert(MsgId.offsetMsgId(Array[Byte](127, 0, 0, 1), 10911, 0xb2L) == Record.get("msg_id_at_b2").asText)
  }

  test("§8.2 with enabledAppendPropCRC: the __CRC32# property and the record CRC") {
    val vector = Vectors.get("record_with_crc")
    val props = properties("KEYS" -> "k1 k2", "UNIQ_KEY" -> Uniq, "WAIT" -> "true", "TAGS" -> "TagA")
    val bytes = record(props = props, appendCrc = true)
    assert(bytes.length == 198 && bytes.length == vector.get("size").asInt)
    assert(ByteBuffer.wrap(bytes).getShort(103) == vector.get("properties_length").asInt)
    assert(toHex(bytes.takeRight(20)) == vector.get("crc_property_hex").asText)
    val buf = ByteBuffer.wrap(bytes)
    val v = new RecordView(buf, 0, 0L)
    val crcProperty = vector.get("crc_property").asText
    assert(v.properties.get("__CRC32#") == crcProperty)
    assert(Properties.expectedRecordCrc(crcProperty) == vector.get("record_crc").asInt)
    assert(RecordCheck.check(buf, 0, 198, verifyCrc = true, verifyPropCrc = true) == 198)
    bytes(90) = 'j'.toByte // body byte: the record CRC no longer matches
    assert(RecordCheck.check(buf, 0, 198, verifyCrc = true, verifyPropCrc = true) == RecordCheck.RecordCrcMismatch)
    assert(RecordCheck.describe(buf, 0, 198, verifyCrc = true, verifyPropCrc = true).startsWith(
      "record CRC mismatch at position 0: __CRC32# says 1144057678, got "
    ))
    assert(RecordCheck.check(buf, 0, 198, verifyCrc = true) == RecordCheck.BodyCrcMismatch)
    assert(RecordCheck.check(buf, 0, 198, verifyCrc = false, verifyPropCrc = true) == 198)
  }

  test("§8.2 derived ConsumeQueue unit and tagsCode") {
    val vector = Vectors.get("consume_queue_unit")
    val unit = ByteBuffer.wrap(hex(vector.get("hex").asText))
    assert(ConsumeQueueUnit.phyOffset(unit, 0) == vector.get("phy").asLong)
    assert(ConsumeQueueUnit.size(unit, 0) == vector.get("size").asInt)
    assert(ConsumeQueueUnit.tagsCode(unit, 0) == JavaHash.tagsCode(vector.get("tags").asText))
    assert(ConsumeQueueUnit.isValid(unit, 0) && !ConsumeQueueUnit.isFiller(unit, 0))
    val filler = ByteBuffer.allocate(20).putLong(0).putInt(Int.MaxValue).putLong(0)
    assert(ConsumeQueueUnit.isFiller(filler, 0) && ConsumeQueueUnit.isValid(filler, 0))
    assert(
      ConsumeQueueUnit.isExtAddress(Int.MinValue.toLong - 1) && !ConsumeQueueUnit.isExtAddress(Int.MinValue.toLong)
    )
  }

  test("§2.6 BLANK: end of segment, and a resync boundary only when it reaches the segment end") {
    val seg = new Array[Byte](512)
    val r0 = record(props = properties("TAGS" -> "t"), phy = 0)
    val r1 = record(props = properties("TAGS" -> "t"), phy = r0.length)
    System.arraycopy(r0, 0, seg, 0, r0.length)
    System.arraycopy(r1, 0, seg, r0.length, r1.length)
    val blankAt = 2 * r0.length
    System.arraycopy(blank(512 - blankAt), 0, seg, blankAt, 8)
    val buf = ByteBuffer.wrap(seg)
    assert(RecordCheck.check(buf, blankAt, 512, verifyCrc = true) == RecordCheck.Blank)
    assert(Resync.nextRecordStart(buf, 1, 512, 0L, 512L) == r0.length)
    assert(Resync.nextRecordStart(buf, r0.length + 1, 512, 0L, 512L) == blankAt)
    assert(Resync.nextRecordStart(buf, r0.length + 1, 512, 0L, 1024L) == -1) // BLANK not reaching the end
    assert(Resync.nextRecordStart(buf, 1, 512, 7L, 519L) == blankAt) // PHYSICALOFFSET fields do not match
  }

  test("§8.3 index file: bytes, lookups, chain, time window") {
    val t = 1700000000123L
    val vector = Vectors.get("index_file")
    val b = new IndexBuilder(vector.get("hash_slots").asInt, vector.get("entries").asInt)
    for (put <- vector.get("puts").elements().asScala) b.put(put.get(0).asText, put.get(1).asLong, put.get(2).asLong)
    val bytes = b.bytes
    assert(bytes.length == vector.get("size").asInt)
    assert(toHex(bytes.take(40)) == vector.get("header_hex").asText)
    val buf = ByteBuffer.wrap(bytes)
    for (slot <- vector.get("slots").properties().asScala)
      assert(buf.getInt(IndexFile.HeaderSize + IndexFile.SlotSize * slot.getKey.toInt) == slot.getValue.asInt, slot)
    for (entry <- vector.get("entries_hex").properties().asScala)
      assert(toHex(bytes.slice(entry.getKey.toInt, entry.getKey.toInt + 20)) == entry.getValue.asText, entry.getKey)
    val view = new IndexFile.View(ByteSource(buf), 100, 400)
    assert(view.header == IndexFile.Header(t, t + 1500, 0, 178, 3, 5))
    def look(key: String, begin: Long = 0, end: Long = Long.MaxValue) =
      view.candidates(JavaHash.indexKeyHash(s"TopicTest#$key"), begin, end).toSeq
    assert(look("k1") == Seq(0L) && look("k2") == Seq(0L) && look("order-1") == Seq(178L) && look(Uniq) == Seq(0L))
    assert(look("k1", begin = t + 1000).isEmpty)
    assert(look("absent").isEmpty)
    assert(IndexFile.geometryProblem(ByteSource(buf), 100, 400).isEmpty)
    assert(IndexFile.detectGeometry(ByteSource(buf)) == ((100, 400)))
  }

  test("§5.5 roll-over quirk: the first entry of a new file is timed against the previous end") {
    val t = 1700000000123L
    val b = new IndexBuilder(100, 400, prevEndPhy = 178, prevEndTs = t + 1500)
    b.put("TopicTest#k1", 356, t + 66500)
    val view = new IndexFile.View(ByteSource(ByteBuffer.wrap(b.bytes)), 100, 400)
    assert(view.header.beginTimestamp == t + 66500 && view.header.endTimestamp == t + 66500)
    assert(view.entryTimeDiff(1) == 65)
    val k1 = JavaHash.indexKeyHash("TopicTest#k1")
    assert(view.candidates(k1, t + 66500, t + 66500).isEmpty) // RocketMQ misses it too
    assert(view.candidates(k1, Long.MinValue, Long.MaxValue).toSeq == Seq(356L))
  }

  test("index chains that loop or leave the file end the walk") {
    val b = new IndexBuilder(1, 8)
    b.put("a", 10, 1000)
    b.put("b", 20, 1000)
    val bytes = b.bytes
    val buf = ByteBuffer.wrap(bytes)
    val entry1 = 40 + 4 + 20
    buf.putInt(entry1 + 16, 2) // entry 1 links back to entry 2: a loop
    val view = new IndexFile.View(ByteSource(buf), 1, 8)
    val all = view.candidates(JavaHash.indexKeyHash("a"), Long.MinValue, Long.MaxValue)
    assert(all.toSeq == Seq(10L))
    assert(IndexFile.geometryProblem(
      ByteSource(buf),
      1,
      8
    ).contains("entry 1 chains to entry 2, not to an older entry"))
  }

  test("geometry detection refuses files without entries and ambiguous sizes") {
    val empty = ByteBuffer.wrap(new IndexBuilder(100, 400).bytes)
    val e = intercept[IllegalArgumentException](IndexFile.detectGeometry(ByteSource(empty)))
    assert(e.getMessage.contains("has no entries (indexCount 0)"))
    val odd = ByteBuffer.allocate(43)
    assert(intercept[IllegalArgumentException](IndexFile.detectGeometry(ByteSource(odd))).getMessage
      .contains("is not 40 + 4*S + 20*N"))
  }
}

object FormatVectorsSuite {

  /** The vectors both engines' tests read (relative to the repository root, where sbt runs the tests). */
  val File = "tests/vectors/format_vectors.json"
}
