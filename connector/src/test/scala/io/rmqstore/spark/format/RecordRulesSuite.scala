package io.rmqstore.spark.format

import java.io.ByteArrayOutputStream
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.util.zip.DeflaterOutputStream

import scala.jdk.CollectionConverters._

import com.github.luben.zstd.ZstdOutputStream
import net.jpountz.lz4.LZ4FrameOutputStream
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.Encode._

/** Record checks (§2.12), properties (§2.8), compression (§2.9), hosts (§2.4) and ids (§3.1). */
class RecordRulesSuite extends AnyFunSuite {
  private def buf(b: Array[Byte]) = ByteBuffer.wrap(b)

  test("properties: split rules, empty names/values skipped, extra 0x01 kept, last duplicate wins") {
    val raw =
      "a\u0001x\u0002\u0001v\u0002n\u0001\u0002b\u0001y\u0001z\u0002a\u0001last\u0002c\u0001tail".getBytes(UTF_8)
    val props = Properties.parse(buf(raw), 0, raw.length)
    assert(props.asScala.toSeq == Seq("a" -> "last", "b" -> "y\u0001z", "c" -> "tail"))
    assert(Properties.find(buf(raw), 0, raw.length, "a".getBytes(UTF_8)) == "last")
    assert(Properties.find(buf(raw), 0, raw.length, "n".getBytes(UTF_8)) == null)
    assert(Properties.find(buf(raw), 0, raw.length, "c".getBytes(UTF_8)) == "tail")
    val bad = Array[Byte]('K', 'E', 'Y', 'S', 1, 0xc3.toByte, 'x', 2)
    assert(Properties.parse(buf(bad), 0, bad.length).get("KEYS") == "\uFFFDx")
    assert(Properties.find(buf(bad), 0, bad.length, "KEYS".getBytes(UTF_8)) == "\uFFFDx")
  }

  test("property spans: byte ranges in the copied field, duplicates resolved like parse; UTF-8 validity") {
    val raw = properties("KEYS" -> "a b", "x" -> "1", "KEYS" -> "c", "u" -> "\u5024\uD83D\uDE00")
    val r = record(props = raw)
    val v = new RecordView(buf(r), 0, 0L)
    val n = v.propertyCount
    val out = v.propertySpans
    def at(i: Int, k: Int) = new String(v.propertyArray, out(4 * i + k), out(4 * i + k + 1), UTF_8)
    assert((0 until n).map(i => at(i, 0) -> at(i, 2)) == Seq("KEYS" -> "c", "x" -> "1", "u" -> "\u5024\uD83D\uDE00"))
    assert(v.properties.asScala.toSeq == (0 until n).map(i => at(i, 0) -> at(i, 2)))
    assert(v.key == "c")
    val found = new RecordView(buf(r), 0, 0L) // KEYS found by Properties.find, not from the spans
    assert(found.key == "c" && found.tags == null && found.uniqKey == null)
    assert(Utf8.isValid(r, v.propertiesPosition, v.propertiesLength))
    assert(Utf8.isValid(v.propertyArray, 0, v.propertiesLength))
    for (bad <- Seq(Array(0xc0, 0x80), Array(0xed, 0xa0, 0x80), Array(0xf4, 0x90, 0x80, 0x80), Array(0xe4, 0xb8)))
      assert(!Utf8.isValid(bad.map(_.toByte), 0, bad.length), bad.toSeq)
  }

  test("UTF-8 validity read eight bytes at a time: a non-ASCII byte anywhere, in any window of the array") {
    val ascii = Array.fill[Byte](40)('a')
    for (len <- 0 to 20; from <- 0 to 9) assert(Utf8.isValid(ascii, from, len))
    for (seq <- Seq(Array(0xc3, 0xa9), Array(0xc3), Array(0x80)).map(_.map(_.toByte)); at <- 0 to 19) {
      val bytes = ascii.clone()
      System.arraycopy(seq, 0, bytes, 3 + at, seq.length)
      val window = bytes.slice(3, 23)
      assert(Utf8.isValid(bytes, 3, 20) == new String(window, UTF_8).getBytes(UTF_8).sameElements(window), (seq, at))
      assert(Utf8.isValid(bytes, 3, 20) == (seq.length == 2 && at < 19), (seq.toSeq, at))
      assert(Utf8.isValid(bytes, 3, at)) // ends before it
    }
    assertThrows[IndexOutOfBoundsException](Utf8.isValid(ascii, 35, 6))
  }

  test("keys: split on single spaces, empty tokens dropped, null without KEYS") {
    val r = record(props = properties("KEYS" -> " a  b "))
    val v = new RecordView(buf(r), 0, 0L)
    assert(v.key == " a  b " && v.keys.toSeq == Seq("a", "b"))
    val spans = new Array[Int](64)
    assert(v.keyTokenSpans(spans) == 2)
    assert(Seq(0, 1).map(i => new String(v.propertyArray, spans(2 * i), spans(2 * i + 1), UTF_8)) == Seq("a", "b"))
    val none = new RecordView(buf(record(props = Array.emptyByteArray)), 0, 0L)
    assert(none.key == null && none.keys == null && none.tags == null && none.properties.isEmpty)
    assert(none.keyTokenSpans(spans) == -1)
  }

  test("check: every invalid case has a code and Python's wording") {
    val good = record(phy = 500)
    val b = buf(good)
    val n = good.length
    def why(bytes: Array[Byte], limit: Int = -1, crc: Boolean = false, phy: Long = RecordCheck.AnyOffset) =
      RecordCheck.describe(buf(bytes), 0, if (limit < 0) bytes.length else limit, crc, phy)
    assert(RecordCheck.check(b, 0, n, verifyCrc = true, 500L) == n)
    assert(RecordCheck.check(b, 0, 4, verifyCrc = false) == RecordCheck.TooShort)
    assert(why(good, 4) == "only 4 bytes left at position 0, a record needs more than 4")
    assert(why(good, n - 1) == s"TOTALSIZE $n at position 0 runs past the end of the buffer (${n - 1} bytes left)")
    val zeros = new Array[Byte](200)
    assert(why(zeros) == "bad magic code 0x00000000 at position 4")
    assert(RecordCheck.check(b, 0, n, verifyCrc = false, 0L) == RecordCheck.PhysicalOffsetMismatch)
    assert(why(
      good,
      phy = 0L
    ) == "PHYSICALOFFSET field 500 at position 0 does not match the record's physical offset 0")
    val badCrc = record(bodyCrc = Some(1))
    assert(why(badCrc, crc = true).startsWith("BODYCRC mismatch at position 0: stored 1, body has "))
    assert(RecordCheck.check(buf(badCrc), 0, badCrc.length, verifyCrc = false) == badCrc.length)
    val longer = good.clone
    ByteBuffer.wrap(longer).putInt(0, n - 1)
    assert(why(longer, n) == s"TOTALSIZE ${n - 1} at position 0 differs from its fields' total length $n")
    val negative = good.clone
    ByteBuffer.wrap(negative).putInt(0, -5)
    assert(why(negative) == "negative TOTALSIZE -5 at position 0")
    val hugeBody = good.clone
    ByteBuffer.wrap(hugeBody).putInt(84, 100000)
    assert(why(hugeBody).startsWith(s"BODYLENGTH 100000 at position 84 exceeds TOTALSIZE $n"))
    val tiny = record(body = Array.emptyByteArray, props = Array.emptyByteArray, topic = "")
    ByteBuffer.wrap(tiny).putInt(0, 90).putInt(84, -1) // calMsgLength counts a negative BODYLENGTH
    assert(RecordCheck.check(buf(tiny), 0, tiny.length, verifyCrc = true) == 90) // like check_record
    assert(why(tiny) == "record at position 0 fails the structural checks (TOTALSIZE 90)")
    val badTopic = good.clone
    badTopic(93) = -3
    assert(why(badTopic) == "bad TOPICLENGTH -3 at position 93")
  }

  test("check: host widths follow sysFlag bits 4/5, v2 magic has a 2-byte topic length") {
    val v6 = host(Array.tabulate[Byte](16)(i => if (i == 15) 1 else 0), 10911)
    for ((born, store) <- Seq((v6, Localhost), (Localhost, v6), (v6, v6))) {
      val r = record(bornHost = born, storeHost = store, phy = 7)
      val v = new RecordView(buf(r), 0, 7L)
      assert(RecordCheck.check(buf(r), 0, r.length, verifyCrc = true, 7L) == r.length)
      assert(v.topic == "TopicTest" && v.tags == "TagA" && v.storeTimestampMs == 1700000000123L)
      assert(v.bornHost == (if (born eq v6) "[::1]:10911" else "127.0.0.1:10911"))
      assert(v.storeHost == (if (store eq v6) "[::1]:10911" else "127.0.0.1:10911"))
      assert(v.msgId.length == (if (store eq v6) 56 else 32))
      assert(MsgId.decode(v.msgId).contains((v.storeHost, 7L)))
      val out = new Array[Byte](math.max(Hosts.MaxTextLength, MsgId.MaxLength))
      assert(new String(out, 0, v.bornHostBytes(out, 0), UTF_8) == v.bornHost)
      assert(new String(out, 0, v.storeHostBytes(out, 0), UTF_8) == v.storeHost)
      assert(new String(out, 0, v.msgIdBytes(out, 0), UTF_8) == v.msgId)
    }
    val longTopic = "%RETRY%" + "g" * 160
    val r = record(topic = longTopic, magic = Layout.MagicV2)
    assert(RecordCheck.check(buf(r), 0, r.length, verifyCrc = true) == r.length)
    assert(new RecordView(buf(r), 0, 0L).topic == longTopic)
  }

  test("check: a schedule-topic record needs an integer DELAY") {
    for ((delay, ok) <- Seq("3" -> true, "-2147483648" -> true, "+7" -> true, "x" -> false, "2147483648" -> false)) {
      val r = record(topic = Layout.ScheduleTopic, props = properties("DELAY" -> delay))
      val code = RecordCheck.check(buf(r), 0, r.length, verifyCrc = false)
      assert((code > 0) == ok, delay)
      if (!ok)
        assert(RecordCheck.describe(buf(r), 0, r.length, verifyCrc = false).contains(s"non-integer DELAY '$delay'"))
    }
  }

  test("hosts: IPv6 in compressed form like Python's ipaddress") {
    def show(groups: Int*): String = {
      val b = ByteBuffer.allocate(20)
      groups.foreach(g => b.putShort(g.toShort))
      b.putInt(8080)
      Hosts.decode(b, 0, 20)
    }
    assert(show(0, 0, 0, 0, 0, 0, 0, 0) == "[::]:8080")
    assert(show(1, 0, 0, 2, 0, 0, 0, 3) == "[1:0:0:2::3]:8080")
    assert(show(1, 0, 0, 2, 0, 0, 3, 4) == "[1::2:0:0:3:4]:8080")
    assert(show(1, 0, 2, 3, 4, 5, 6, 7) == "[1:0:2:3:4:5:6:7]:8080")
    assert(show(0xfe80, 0, 0, 0, 0x1ff, 0xfe23, 0x4567, 0x890a) == "[fe80::1ff:fe23:4567:890a]:8080")
    assert(show(0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304) == "[::ffff:102:304]:8080")
    assert(show(1, 2, 3, 4, 5, 6, 7, 0) == "[1:2:3:4:5:6:7:0]:8080")
    assert(show(0xffff, 0xabc, 0, 0, 1, 0, 0, 0) == "[ffff:abc:0:0:1::]:8080")
    val v4 = ByteBuffer.allocate(8).put(Array[Byte](10, 0, -1, 7)).putInt(-1)
    assert(Hosts.decode(v4, 0, 8) == "10.0.255.7:-1")
  }

  test("msgId: decode rejects UNIQ_KEY-like ids, odd lengths and non-hex") {
    assert(MsgId.decode("0A0000070DAC1B6D3586000000000000").isEmpty) // port 0x1B6D3586 > 65535
    assert(MsgId.decode("7F00000100002A9F00000000000000").isEmpty)
    assert(MsgId.decode("7G00000100002A9F0000000000000000").isEmpty)
    assert(MsgId.decode(null).isEmpty)
  }

  private def compressed(kind: Int, body: Array[Byte]): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val stream = kind match {
      case Layout.CompressionLz4 => new LZ4FrameOutputStream(out)
      case Layout.CompressionZstd => new ZstdOutputStream(out)
      case _ => new DeflaterOutputStream(out)
    }
    stream.write(body)
    stream.close()
    out.toByteArray
  }

  test("compression: zlib (legacy and typed), LZ4 frame, zstd; empty stays empty; corrupt names the type") {
    val body = ("payload " * 100).getBytes(UTF_8)
    for (
      kind <- Seq(Layout.CompressionLegacyZlib, Layout.CompressionLz4, Layout.CompressionZstd, Layout.CompressionZlib)
    ) {
      val sysFlag = Layout.SysFlagCompressed | (kind << Layout.CompressionTypeShift)
      val stored = compressed(kind, body)
      assert(Compression.decompress(stored, sysFlag).sameElements(body), kind)
      val r = record(body = stored, sysFlag = sysFlag)
      val v = new RecordView(ByteBuffer.wrap(r), 0, 0L)
      assert(v.body(decompress = true).sameElements(body) && v.body(decompress = false).sameElements(stored))
      assert(Compression.decompress(Array.emptyByteArray, sysFlag).isEmpty)
      val e = intercept[IllegalArgumentException](Compression.decompress(stored.take(stored.length / 2), sysFlag))
      assert(e.getMessage.startsWith(s"cannot decompress body (compression type $kind): "))
    }
    assert(Compression.decompress(body, 0) eq body)
    val unknown = intercept[IllegalArgumentException](Compression.decompress(body, 0x501))
    assert(unknown.getMessage == "unknown compression type 5 in sysFlag 0x501")
  }

  test("compression: a body inflating past the cap is refused") {
    val big = new Array[Byte](Layout.MaxMessageSize + 1)
    val stored = compressed(Layout.CompressionZstd, big)
    val e = intercept[IllegalArgumentException](Compression.decompress(stored, 0x201))
    assert(e.getMessage == s"cannot decompress body (compression type 2): body inflates past " +
      s"${Layout.MaxMessageSize} bytes (the cap on a decompressed body; the producer refuses bodies over " +
      "maxMessageSize before compressing them)")
    for (kind <- Seq(Layout.CompressionZlib, Layout.CompressionLz4)) { // every codec honours a lower cap
      val small = compressed(kind, new Array[Byte](5000))
      val flag = Layout.SysFlagCompressed | (kind << Layout.CompressionTypeShift)
      assert(Compression.decompress(small, flag, maxSize = 5000).length == 5000)
      val refused = intercept[BodyDecompressionException](Compression.decompress(small, flag, maxSize = 4999))
      assert(refused.getMessage.contains("body inflates past 4999 bytes"), kind)
    }
    assert(Compression.decompress(compressed(Layout.CompressionZstd, big.take(1 << 20)), 0x201).length == (1 << 20))
  }
}
