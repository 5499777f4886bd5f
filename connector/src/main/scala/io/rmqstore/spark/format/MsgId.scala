package io.rmqstore.spark.format

import java.nio.ByteBuffer

/** offsetMsgId: the broker message id, store host + physical offset in uppercase hex (docs/format.md §3.1). */
object MsgId {
  private val Hex = "0123456789ABCDEF".getBytes(java.nio.charset.StandardCharsets.US_ASCII)

  /** Length of an IPv6 offsetMsgId, the longer kind. */
  final val MaxLength = 56
  private final val OffsetLen = 8
  private final val MaxPort = 0xffff

  /** Hex of address bytes + int port + long physical offset: 32 chars (IPv4) / 56 (IPv6). */
  def offsetMsgId(hostBytes: Array[Byte], port: Int, phy: Long): String = {
    val buf = ByteBuffer.allocate(hostBytes.length + 4)
    buf.put(hostBytes).putInt(port)
    offsetMsgId(buf, 0, buf.capacity, phy)
  }

  /** offsetMsgId of the store host stored at `hostPos` (`hostLen` 8 or 20 bytes, §2.4) of `buf`. */
  def offsetMsgId(buf: ByteBuffer, hostPos: Int, hostLen: Int, phy: Long): String = {
    val out = new Array[Byte](2 * (hostLen + OffsetLen))
    new String(out, 0, write(buf, hostPos, hostLen, phy, out, 0), java.nio.charset.StandardCharsets.ISO_8859_1)
  }

  /** Write the offsetMsgId as ASCII to `out` at `off` (room for 56 bytes); returns its length (32 or 56). */
  def write(buf: ByteBuffer, hostPos: Int, hostLen: Int, phy: Long, out: Array[Byte], off: Int): Int = {
    var i = 0
    while (i < hostLen) {
      val b = buf.get(hostPos + i) & 0xff
      out(off + 2 * i) = Hex(b >>> 4)
      out(off + 2 * i + 1) = Hex(b & 0xf)
      i += 1
    }
    var shift = 56
    var at = off + 2 * hostLen
    while (shift >= 0) {
      val b = (phy >>> shift).toInt & 0xff
      out(at) = Hex(b >>> 4)
      out(at + 1) = Hex(b & 0xf)
      at += 2
      shift -= 8
    }
    at - off
  }

  /** (store host `ip:port`, physical offset) of an offsetMsgId, like `MessageDecoder.decodeMessageId`.
    *
    * IPv4 iff 32 hex chars, IPv6 iff 56, case-insensitive; None for anything else, including a port
    * outside 0..65535 (which is how a UNIQ_KEY is usually rejected, §3.3).
    */
  def decode(id: String): Option[(String, Long)] = {
    if (
      id == null || (id.length != 2 * (Layout.Ipv4HostLen + OffsetLen) &&
        id.length != 2 * (Layout.Ipv6HostLen + OffsetLen))
    ) return None
    val raw = new Array[Byte](id.length / 2)
    var i = 0
    while (i < raw.length) {
      val hi = Character.digit(id.charAt(2 * i), 16)
      val lo = Character.digit(id.charAt(2 * i + 1), 16)
      if (hi < 0 || lo < 0 || id.charAt(2 * i) > 'f' || id.charAt(2 * i + 1) > 'f') return None
      raw(i) = ((hi << 4) | lo).toByte
      i += 1
    }
    val buf = ByteBuffer.wrap(raw)
    val hostLen = raw.length - OffsetLen
    val port = buf.getInt(hostLen - 4)
    if (port < 0 || port > MaxPort) None
    else Some((Hosts.decode(buf, 0, hostLen), buf.getLong(hostLen)))
  }
}
