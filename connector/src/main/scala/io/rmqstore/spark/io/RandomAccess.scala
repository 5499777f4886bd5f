package io.rmqstore.spark.io

import java.nio.ByteBuffer

/** A file opened read-only for positioned reads. */
trait RandomAccess extends AutoCloseable {

  /** The path as the user's store location spells it (for error messages). */
  def path: String

  /** File size when opened. */
  def length: Long

  /** True when `read` hands out views of a memory map: large reads cost nothing until touched. */
  def zeroCopy: Boolean

  /** Bytes [pos, pos + len) clipped to `length`, as a big-endian buffer whose index 0 is byte `pos`
    * (position 0, limit = bytes returned). Never writes; throws IllegalArgumentException for a
    * negative range and java.io.IOException when the file is shorter than when it was opened.
    */
  def read(pos: Long, len: Int): ByteBuffer

  /** `read` of each range (position, length), in order; a remote file fetches them in one batch of
    * concurrent requests.
    */
  def readRanges(ranges: Seq[(Long, Int)]): Seq[ByteBuffer] = ranges.map { case (pos, len) => read(pos, len) }

  protected final def clip(pos: Long, len: Int): Int = {
    if (pos < 0 || len < 0) throw new IllegalArgumentException(s"invalid read range: offset $pos, length $len")
    math.max(0L, math.min(len.toLong, length - pos)).toInt
  }
}
