package io.rmqstore.spark.format

import java.nio.ByteBuffer

/** Bytes of one file fetched on demand: a buffer in memory (a memory map) or a remote file read by ranges
  * (python/rmqstore/format/indexfile.py `ByteSource`). Layout code over one reads only the bytes it looks
  * at; a remote source gets `prefetch` hints so the ranges a step needs arrive together. Big-endian.
  */
trait ByteSource {

  /** Size of the file in bytes. */
  def length: Long

  /** Bytes [pos, pos + len) clipped to `length`, index 0 = byte `pos`; IllegalArgumentException for a
    * negative range.
    */
  def bytes(pos: Long, len: Int): ByteBuffer

  /** The big-endian int at `pos`; IndexOutOfBoundsException past the end. */
  def getInt(pos: Long): Int = whole(pos, 4).getInt(0)

  /** The big-endian long at `pos`; IndexOutOfBoundsException past the end. */
  def getLong(pos: Long): Long = whole(pos, 8).getLong(0)

  /** Hint that the ranges (position, length) are read next: a remote source fetches what it lacks of them
    * in few requests; one in memory does nothing.
    */
  def prefetch(ranges: Seq[(Long, Int)]): Unit = ()

  /** The whole file as a source in memory, for checks that look at most of its bytes (one read). */
  def inMemory: ByteSource = {
    if (length > Int.MaxValue) throw new IllegalArgumentException(s"$length bytes do not fit in memory")
    ByteSource(bytes(0, length.toInt))
  }

  private def whole(pos: Long, len: Int): ByteBuffer = {
    val buf = bytes(pos, len)
    if (buf.limit() < len) throw new IndexOutOfBoundsException(s"$len bytes at $pos past the end ($length bytes)")
    buf
  }
}

object ByteSource {

  /** The bytes of `buf` from its index 0 to its limit. */
  def apply(buf: ByteBuffer): ByteSource = new InMemory(buf)

  private final class InMemory(buf: ByteBuffer) extends ByteSource {
    def length: Long = buf.limit().toLong

    def bytes(pos: Long, len: Int): ByteBuffer = {
      if (pos < 0 || len < 0) throw new IllegalArgumentException(s"invalid read range: offset $pos, length $len")
      val n = math.max(0L, math.min(len.toLong, length - pos)).toInt
      if (n == 0) ByteBuffer.allocate(0) else buf.slice(pos.toInt, n)
    }

    override def getInt(pos: Long): Int = buf.getInt(Math.toIntExact(pos))
    override def getLong(pos: Long): Long = buf.getLong(Math.toIntExact(pos))
    override def inMemory: ByteSource = this
  }
}
