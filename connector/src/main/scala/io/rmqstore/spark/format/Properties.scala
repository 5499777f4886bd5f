package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

/** The PROPERTIES field of a commit-log record (spec §2.8), mirroring
  * `MessageDecoder.string2messageProperties`.
  *
  * `name 0x01 value 0x02` pairs in UTF-8, split at each 0x02 (the last segment may lack it). A segment
  * is used only when its first 0x01 leaves a non-empty name and a non-empty value; the value keeps
  * any further 0x01; later duplicates overwrite earlier ones. RocketMQ decodes the whole field first;
  * splitting the bytes is the same because 0x01/0x02 never occur inside a UTF-8 sequence and Java's
  * decoder never folds them into a malformed one.
  */
object Properties {

  /** Every property of the `len` bytes at `pos` of `buf`, in first-seen order (last value wins). */
  def parse(buf: ByteBuffer, pos: Int, len: Int): java.util.LinkedHashMap[String, String] = {
    val out = new java.util.LinkedHashMap[String, String]()
    val end = pos + len
    var start = pos
    while (start < end) {
      val stop = indexOf(buf, start, end, Layout.PropertySeparator)
      val segEnd = if (stop < 0) end else stop
      val sep = indexOf(buf, start, segEnd, Layout.PropertyNameValueSeparator)
      if (sep > start && sep < segEnd - 1) out.put(text(buf, start, sep - start), text(buf, sep + 1, segEnd - sep - 1))
      start = segEnd + 1
    }
    out
  }

  /** The value of property `name` (an ASCII name) or null, without building the map: last one wins. */
  def find(buf: ByteBuffer, pos: Int, len: Int, name: Array[Byte]): String = {
    val end = pos + len
    var start = pos
    var found = -1
    var foundEnd = -1
    while (start < end) {
      val stop = indexOf(buf, start, end, Layout.PropertySeparator)
      val segEnd = if (stop < 0) end else stop
      val nameEnd = start + name.length
      if (nameEnd < segEnd - 1 && buf.get(nameEnd) == Layout.PropertyNameValueSeparator && same(buf, start, name)) {
        found = nameEnd + 1
        foundEnd = segEnd
      }
      start = segEnd + 1
    }
    if (found < 0) null else text(buf, found, foundEnd - found)
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

  /** UTF-8 text of `len` bytes at `pos` (malformed input becomes U+FFFD, like `new String(.., UTF_8)`). */
  def text(buf: ByteBuffer, pos: Int, len: Int): String =
    if (len <= 0) ""
    else if (buf.hasArray) new String(buf.array, buf.arrayOffset + pos, len, UTF_8)
    else {
      val bytes = new Array[Byte](len)
      buf.get(pos, bytes)
      new String(bytes, UTF_8)
    }

  private def indexOf(buf: ByteBuffer, from: Int, until: Int, b: Byte): Int = {
    var i = from
    while (i < until) {
      if (buf.get(i) == b) return i
      i += 1
    }
    -1
  }

  private def same(buf: ByteBuffer, pos: Int, name: Array[Byte]): Boolean = {
    var i = 0
    while (i < name.length) {
      if (buf.get(pos + i) != name(i)) return false
      i += 1
    }
    true
  }
}
