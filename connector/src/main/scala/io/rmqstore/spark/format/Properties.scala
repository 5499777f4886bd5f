package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.spark.unsafe.Platform

/** The PROPERTIES field of a commit-log record (docs/format.md §2.8), mirroring
  * `MessageDecoder.string2messageProperties`.
  *
  * `name 0x01 value 0x02` pairs in UTF-8, split at each 0x02 (the last segment may lack it). A segment
  * is used only when its first 0x01 leaves a non-empty name and a non-empty value; the value keeps
  * any further 0x01; later duplicates overwrite earlier ones (keeping the first one's place).
  * RocketMQ decodes the whole field first; splitting the bytes is the same because 0x01/0x02 never
  * occur inside a UTF-8 sequence and Java's decoder never folds them into a malformed one.
  */
object Properties {

  /** Ints per property in the `spans` output: name position, name length, value position, value length. */
  final val SpanInts = 4

  /** Most properties a field can hold: 0x7FFF bytes, at least 4 per property (`a 0x01 b 0x02`). */
  final val MaxProperties = 0x7fff / 4 + 1

  /** The properties of `bytes(from until until)` as spans in `out` (`SpanInts` ints each: name position,
    * name length, value position, value length, positions in `bytes`), duplicates resolved (last value
    * wins, first place kept); returns the number of properties. `out` needs room for `MaxProperties`
    * spans. No string is built: copy the UTF-8 bytes straight into columns (check them with
    * `Utf8.isValid`; malformed ones decode to U+FFFD in RocketMQ).
    */
  def spans(bytes: Array[Byte], from: Int, until: Int, out: Array[Int]): Int = {
    var count = 0
    var start = from
    while (start < until) {
      val stop = indexOf(bytes, start, until, Layout.PropertySeparator)
      val segEnd = if (stop < 0) until else stop
      val sep = indexOf(bytes, start, segEnd, Layout.PropertyNameValueSeparator)
      if (sep > start && sep < segEnd - 1) {
        val nameLen = sep - start
        var e = 0
        while (
          e < count && !(out(e * SpanInts + 1) == nameLen &&
            java.util.Arrays.equals(bytes, out(e * SpanInts), out(e * SpanInts) + nameLen, bytes, start, sep))
        ) e += 1
        val at = e * SpanInts
        if (e == count) {
          out(at) = start
          out(at + 1) = nameLen
          count += 1
        }
        out(at + 2) = sep + 1
        out(at + 3) = segEnd - sep - 1
      }
      start = segEnd + 1
    }
    count
  }

  /** Every property of `bytes(from until until)`, in first-seen order (last value wins). */
  def parse(bytes: Array[Byte], from: Int, until: Int): java.util.LinkedHashMap[String, String] = {
    val out = new java.util.LinkedHashMap[String, String]()
    val s = new Array[Int](SpanInts * math.min(MaxProperties, (until - from) / 4 + 1))
    val n = spans(bytes, from, until, s)
    var i = 0
    while (i < n) {
      val at = i * SpanInts
      out.put(new String(bytes, s(at), s(at + 1), UTF_8), new String(bytes, s(at + 2), s(at + 3), UTF_8))
      i += 1
    }
    out
  }

  /** Every property of the `len` bytes at `pos` of `buf` (see the array version). */
  def parse(buf: ByteBuffer, pos: Int, len: Int): java.util.LinkedHashMap[String, String] = {
    val bytes = copyOut(buf, pos, len)
    parse(bytes, 0, len)
  }

  /** Value spans (position in `bytes`, length; -1 position when absent) of the ASCII `names`, last one
    * wins, in one pass without building the map: `out(2*i)`, `out(2*i+1)` for `names(i)`.
    */
  def find(bytes: Array[Byte], from: Int, until: Int, names: Array[Array[Byte]], out: Array[Int]): Unit = {
    java.util.Arrays.fill(out, 0, 2 * names.length, -1)
    var start = from
    while (start < until) {
      val stop = indexOf(bytes, start, until, Layout.PropertySeparator)
      val segEnd = if (stop < 0) until else stop
      var i = 0
      while (i < names.length) {
        val name = names(i)
        val nameEnd = start + name.length
        if (
          nameEnd < segEnd - 1 && bytes(nameEnd) == Layout.PropertyNameValueSeparator &&
          java.util.Arrays.equals(bytes, start, nameEnd, name, 0, name.length)
        ) {
          out(2 * i) = nameEnd + 1
          out(2 * i + 1) = segEnd - nameEnd - 1
        }
        i += 1
      }
      start = segEnd + 1
    }
  }

  /** The value of the ASCII property `name` in the `len` bytes at `pos` of `buf`, null when absent. */
  def find(buf: ByteBuffer, pos: Int, len: Int, name: Array[Byte]): String = {
    val bytes = copyOut(buf, pos, len)
    val out = new Array[Int](2)
    find(bytes, 0, len, Array(name), out)
    if (out(0) < 0) null else new String(bytes, out(0), out(1), UTF_8)
  }

  /** The `__CRC32#` value read back the way recovery does: digits reversed, int overflow, -1 if absent. */
  def expectedRecordCrc(value: String): Int =
    if (value == null) -1
    else {
      var expected = 0
      var i = value.length - 1
      while (i >= 0) {
        expected = expected * 10 + (value.charAt(i) - '0')
        i -= 1
      }
      expected
    }

  private val scratch = ThreadLocal.withInitial[Array[Byte]](() => new Array[Byte](1 << 12))

  /** The `len` bytes at `pos` of `buf` in a per-thread scratch array (index 0 = `pos`). */
  private def copyOut(buf: ByteBuffer, pos: Int, len: Int): Array[Byte] = {
    var bytes = scratch.get
    if (bytes.length < len) { bytes = new Array[Byte](len); scratch.set(bytes) }
    buf.get(pos, bytes, 0, len)
    bytes
  }

  /** UTF-8 text of `len` bytes at `pos` (malformed input becomes U+FFFD, like `new String(.., UTF_8)`). */
  def text(buf: ByteBuffer, pos: Int, len: Int): String =
    if (len <= 0) ""
    else if (buf.hasArray) new String(buf.array, buf.arrayOffset + pos, len, UTF_8)
    else new String(copyOut(buf, pos, len), 0, len, UTF_8)

  private def indexOf(bytes: Array[Byte], from: Int, until: Int, b: Byte): Int = {
    var i = from
    while (i < until) {
      if (bytes(i) == b) return i
      i += 1
    }
    -1
  }
}

/** UTF-8 well-formedness (Unicode table 3-7: no overlongs, surrogates or values above U+10FFFF). */
object Utf8 {

  /** True when `bytes(pos until pos + len)` is well-formed UTF-8 (then Java decodes it unchanged). */
  def isValid(bytes: Array[Byte], pos: Int, len: Int): Boolean = {
    if (pos < 0 || len < 0 || pos > bytes.length - len)
      throw new IndexOutOfBoundsException(s"bytes [$pos, ${pos.toLong + len}) of an array of ${bytes.length}")
    isValid(bytes, Platform.BYTE_ARRAY_OFFSET.toLong + pos, len)
  }

  /** `isValid` of the `len` bytes at the `Platform` address (`base`, `offset`): an array's or native memory's
    * (null `base`); the caller guarantees the bytes are there.
    */
  def isValid(base: AnyRef, offset: Long, len: Int): Boolean = {
    val end = offset + len
    var high = 0L // all ASCII, the usual case: eight bytes at a time, branch-free
    var i = offset
    while (i <= end - 8) {
      high |= Platform.getLong(base, i)
      i += 8
    }
    while (i < end) {
      high |= Platform.getByte(base, i)
      i += 1
    }
    if ((high & 0x8080808080808080L) == 0) return true
    i = offset
    while (i < end) {
      val b = Platform.getByte(base, i) & 0xff
      if (b < 0x80) i += 1
      else {
        if (b < 0xc2 || b > 0xf4) return false
        val width = if (b < 0xe0) 2 else if (b < 0xf0) 3 else 4
        if (i + width > end) return false
        val second = Platform.getByte(base, i + 1) & 0xff
        val low = if (b == 0xe0) 0xa0 else if (b == 0xf0) 0x90 else 0x80
        val high = if (b == 0xed) 0x9f else if (b == 0xf4) 0x8f else 0xbf
        if (second < low || second > high) return false
        var k = 2
        while (k < width) {
          if ((Platform.getByte(base, i + k) & 0xc0) != 0x80) return false
          k += 1
        }
        i += width
      }
    }
    true
  }
}
