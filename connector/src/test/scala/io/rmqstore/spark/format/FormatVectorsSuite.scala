package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.Encode._

/** The verified vectors of docs/format.md (§8) and the byte rules of §2-§5. */
class FormatVectorsSuite extends AnyFunSuite {
  // §8.2: the example record, full hex.
  private val ExampleHex =
    "000000B2DAA320A73610A686000000000000000000000000000000000000000000000000000000000000018BCFE568007F0000010000CF12" +
      "0000018BCFE5687B7F00000100002A9F0000000000000000000000000000000568656C6C6F09546F706963546573740049" +
      "4B455953016B31206B3202554E49515F4B4559013746303030303031303444323142364433353836303532363543303030303030" +
      "025741495401747275650254414753015461674102"
  private val Uniq = "7F00000104D21B6D358605265C000000"
  private def example: ByteBuffer = ByteBuffer.wrap(hex(ExampleHex))

  test("§8.1 hashes, key hashes and slots (non-BMP and MIN_VALUE included)") {
    val vectors = Seq(
      ("TopicTest#order-1", -1829193424, 4193424, 24),
      ("TopicTest#k1", 2746024, 2746024, 24),
      ("TopicTest#k2", 2746025, 2746025, 25),
      (s"TopicTest#$Uniq", 1581648890, 1648890, 90),
      ("TopicTest#订单-1", -573861415, 3861415, 15),
      ("TopicTest#key-\uD83D\uDE00", 2033569811, 3569811, 11),
      ("polygenelubricants", Int.MinValue, 0, 0)
    )
    for ((key, hash, slotDefault, slot100) <- vectors) {
      assert(JavaHash.stringHash(key) == hash, key)
      val keyHash = JavaHash.indexKeyHash(key)
      assert(keyHash == (if (hash == Int.MinValue) 0 else math.abs(hash)), key)
      assert(keyHash % IndexFile.DefaultHashSlots == slotDefault, key)
      assert(keyHash % 100 == slot100, key)
    }
    assert(JavaHash.tagsCode("TagA") == 2598919L)
    assert(JavaHash.tagsCode("") == 0L && JavaHash.tagsCode(null) == 0L)
    assert(JavaHash.tagsCode("polygenelubricants") == Int.MinValue.toLong)
  }

  test("§8.2 the example record: the encoder's bytes, every field, msgId") {
    val props = properties("KEYS" -> "k1 k2", "UNIQ_KEY" -> Uniq, "WAIT" -> "true", "TAGS" -> "TagA")
    assert(toHex(record(props = props)) == ExampleHex)
    assert(RecordCheck.check(example, 0, 178, verifyCrc = true, 0L) == 178)
    val v = new RecordView(example, 0, 0L)
    assert(v.totalSize == 178 && v.magic == Layout.MagicV1 && v.bodyCrc == 907060870)
    assert(v.queueId == 0 && v.flag == 0 && v.queueOffset == 0 && v.sysFlag == 0)
    assert(v.bornTimestampMs == 1700000000000L && v.storeTimestampMs == 1700000000123L)
    assert(v.bornHost == "127.0.0.1:53010" && v.storeHost == "127.0.0.1:10911")
    assert(v.reconsumeTimes == 0 && v.preparedTransactionOffset == 0)
    assert(new String(v.body(decompress = true), UTF_8) == "hello" && v.bodyLength == 5)
    assert(v.topic == "TopicTest" && v.topicPosition == 94 && v.topicLength == 9)
    assert(v.propertiesPosition == 105 && v.propertiesLength == 73)
    assert(v.key == "k1 k2" && v.keys.toSeq == Seq("k1", "k2") && v.tags == "TagA" && v.uniqKey == Uniq)
    assert(v.properties.asScala == Map("KEYS" -> "k1 k2", "UNIQ_KEY" -> Uniq, "WAIT" -> "true", "TAGS" -> "TagA"))
    assert(v.msgId == "7F00000100002A9F0000000000000000")
    assert(MsgId.decode("7f00000100002a9f0000000000000000").contains(("127.0.0.1:10911", 0L)))
    assert(MsgId.offsetMsgId(Array[Byte](127, 0, 0, 1), 10911, 0xb2L) == "7F00000100002A9F00000000000000B2")
  }

  test("§8.2 with enabledAppendPropCRC: the __CRC32# property and the record CRC") {
    val props = properties("KEYS" -> "k1 k2", "UNIQ_KEY" -> Uniq, "WAIT" -> "true", "TAGS" -> "TagA")
    val bytes = record(props = props, appendCrc = true)
    assert(bytes.length == 198 && ByteBuffer.wrap(bytes).getShort(103) == 93)
    assert(toHex(bytes.takeRight(20)) == "5F5F435243333223013837363735303434313102")
    val buf = ByteBuffer.wrap(bytes)
    val v = new RecordView(buf, 0, 0L)
    assert(v.properties.get("__CRC32#") == "8767504411")
    assert(Properties.expectedRecordCrc("8767504411") == 1144057678)
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
    val unit = ByteBuffer.wrap(hex("0000000000000000" + "000000B2" + "000000000027A807"))
    assert(ConsumeQueueUnit.phyOffset(unit, 0) == 0 && ConsumeQueueUnit.size(unit, 0) == 178)
    assert(ConsumeQueueUnit.tagsCode(unit, 0) == JavaHash.tagsCode("TagA"))
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
    val b = new IndexBuilder(100, 400)
    b.put(s"TopicTest#$Uniq", 0, t)
    b.put("TopicTest#k1", 0, t)
    b.put("TopicTest#k2", 0, t)
    b.put("TopicTest#order-1", 178, t + 1500)
    val bytes = b.bytes
    assert(bytes.length == 8440)
    assert(toHex(bytes.take(40)) ==
      "0000018BCFE5687B0000018BCFE56E57000000000000000000000000000000B20000000300000005")
    val buf = ByteBuffer.wrap(bytes)
    assert(buf.getInt(400) == 1 && buf.getInt(136) == 4 && buf.getInt(140) == 3)
    assert(toHex(bytes.slice(460, 480)) == "5E460BFA" + "0" * 32)
    assert(toHex(bytes.slice(520, 540)) == "6D0746D0" + "00000000000000B2" + "00000001" + "00000002")
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
