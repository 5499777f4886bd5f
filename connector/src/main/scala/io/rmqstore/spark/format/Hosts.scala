package io.rmqstore.spark.format

import java.nio.ByteBuffer

/** BORNHOST / STOREHOSTADDRESS: address bytes then a 4-byte big-endian port (spec §2.4).
  *
  * Text form is `ip:port` for IPv4 and `[addr]:port` for IPv6 in compressed notation (longest run of
  * two or more zero groups as `::`, lowercase hex), as python/rmqstore/format/hosts.py prints it.
  * The port is shown as stored (a signed int).
  */
object Hosts {

  /** The host of `len` (8 or 20) bytes at `pos` of `buf` as text. */
  def decode(buf: ByteBuffer, pos: Int, len: Int): String = {
    val sb = new java.lang.StringBuilder(if (len == Layout.Ipv4HostLen) 21 else 48)
    if (len == Layout.Ipv4HostLen) {
      var i = 0
      while (i < 4) {
        if (i > 0) sb.append('.')
        sb.append(buf.get(pos + i) & 0xff)
        i += 1
      }
      sb.append(':').append(buf.getInt(pos + 4))
    } else if (len == Layout.Ipv6HostLen) {
      sb.append('[')
      appendIpv6(sb, buf, pos)
      sb.append("]:").append(buf.getInt(pos + 16))
    } else throw new IllegalArgumentException(s"a host is 8 or 20 bytes, got $len")
    sb.toString
  }

  private def appendIpv6(sb: java.lang.StringBuilder, buf: ByteBuffer, pos: Int): Unit = {
    val groups = Array.tabulate(8)(i => buf.getShort(pos + 2 * i) & 0xffff)
    var bestStart = -1
    var bestLen = 0
    var i = 0
    while (i < 8) {
      if (groups(i) == 0) {
        var j = i
        while (j < 8 && groups(j) == 0) j += 1
        if (j - i > bestLen) { bestStart = i; bestLen = j - i }
        i = j
      } else i += 1
    }
    if (bestLen < 2) bestStart = -1
    i = 0
    while (i < 8) {
      if (i == bestStart) {
        sb.append("::")
        i += bestLen
      } else {
        if (i > 0 && i != bestStart + bestLen) sb.append(':')
        sb.append(Integer.toHexString(groups(i)))
        i += 1
      }
    }
  }
}
