package io.rmqstore.spark.format

import java.nio.ByteBuffer

/** BORNHOST / STOREHOSTADDRESS: address bytes then a 4-byte big-endian port (docs/format.md §2.4).
  *
  * Text form is `ip:port` for IPv4 and `[addr]:port` for IPv6 in compressed notation (longest run of
  * two or more zero groups as `::`, lowercase hex), as python/rmqstore/format/hosts.py prints it.
  * The port is shown as stored (a signed int).
  */
object Hosts {

  /** Longest text of a host: `[` + 39 address chars + `]:` + an 11-char signed int port. */
  final val MaxTextLength = 53

  private val HexLower = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII)

  /** The host of `len` (8 or 20) bytes at `pos` of `buf` as text. */
  def decode(buf: ByteBuffer, pos: Int, len: Int): String = {
    val out = new Array[Byte](MaxTextLength)
    new String(out, 0, write(buf, pos, len, out, 0), java.nio.charset.StandardCharsets.ISO_8859_1)
  }

  /** Write the host's text as ASCII to `out` at `off` (room for `MaxTextLength`); returns its length. */
  def write(buf: ByteBuffer, pos: Int, len: Int, out: Array[Byte], off: Int): Int = {
    var at = off
    if (len == Layout.Ipv4HostLen) {
      var i = 0
      while (i < 4) {
        if (i > 0) { out(at) = '.'; at += 1 }
        at = writeInt(buf.get(pos + i) & 0xff, out, at)
        i += 1
      }
      out(at) = ':'
      at = writeInt(buf.getInt(pos + 4), out, at + 1)
    } else if (len == Layout.Ipv6HostLen) {
      out(at) = '['
      at = writeIpv6(buf, pos, out, at + 1)
      out(at) = ']'
      out(at + 1) = ':'
      at = writeInt(buf.getInt(pos + 16), out, at + 2)
    } else throw new IllegalArgumentException(s"a host is 8 or 20 bytes, got $len")
    at - off
  }

  /** Host texts built once per distinct host (a store's hosts are few: its brokers and the producers'
    * addresses): `text` returns an exact-size array, shared by every record with those address and port
    * bytes and never changed, so columns may point at it.
    */
  final class Texts {
    private val texts = new java.util.HashMap[ByteBuffer, Array[Byte]]
    private val scratch = new Array[Byte](MaxTextLength)

    def text(buf: ByteBuffer, pos: Int, len: Int): Array[Byte] = {
      val raw = buf.slice(pos, len) // equal and hashed by content
      var text = texts.get(raw)
      if (text == null) {
        if (texts.size >= MaxCachedHosts) texts.clear()
        text = java.util.Arrays.copyOf(scratch, write(buf, pos, len, scratch, 0))
        val key = new Array[Byte](len)
        buf.get(pos, key)
        texts.put(ByteBuffer.wrap(key), text)
      }
      text
    }
  }

  /** Distinct hosts a `Texts` keeps before it starts afresh. */
  final val MaxCachedHosts = 1 << 16

  // Decimal digits of a signed int; returns the position after them.
  private def writeInt(value: Int, out: Array[Byte], off: Int): Int = {
    var at = off
    var v = value.toLong
    if (v < 0) { out(at) = '-'; at += 1; v = -v }
    var digits = 1
    var p = 10L
    while (p <= v) { digits += 1; p *= 10 }
    var i = at + digits - 1
    while (i >= at) {
      out(i) = ('0' + (v % 10)).toByte
      v /= 10
      i -= 1
    }
    at + digits
  }

  // Eight lowercase hex groups, the longest run of two or more zero groups (the first of equal ones) as `::`.
  private def writeIpv6(buf: ByteBuffer, pos: Int, out: Array[Byte], off: Int): Int = {
    var bestStart = -1
    var bestLen = 0
    var i = 0
    while (i < 8) {
      if (buf.getShort(pos + 2 * i) == 0) {
        var j = i
        while (j < 8 && buf.getShort(pos + 2 * j) == 0) j += 1
        if (j - i > bestLen) { bestStart = i; bestLen = j - i }
        i = j
      } else i += 1
    }
    if (bestLen < 2) bestStart = -1
    var at = off
    i = 0
    while (i < 8) {
      if (i == bestStart) {
        out(at) = ':'
        out(at + 1) = ':'
        at += 2
        i += bestLen
      } else {
        if (i > 0 && i != bestStart + bestLen) { out(at) = ':'; at += 1 }
        val g = buf.getShort(pos + 2 * i) & 0xffff
        var shift = if (g >= 0x1000) 12 else if (g >= 0x100) 8 else if (g >= 0x10) 4 else 0
        while (shift >= 0) {
          out(at) = HexLower((g >>> shift) & 0xf)
          at += 1
          shift -= 4
        }
        i += 1
      }
    }
    at
  }
}
