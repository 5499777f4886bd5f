package io.rmqstore.spark.format

import java.io.{ByteArrayInputStream, InputStream}
import java.util.zip.{Inflater, InflaterInputStream}

import com.github.luben.zstd.{RecyclingBufferPool, ZstdInputStream}

/** A compressed body that cannot be decompressed: corrupt, truncated, an unknown type, or inflating past
  * the size cap; the message says which, in python/rmqstore/format/compression.py's words.
  */
final class BodyDecompressionException(message: String, cause: Throwable = null)
    extends IllegalArgumentException(message, cause)

/** Producer-side body compression (docs/format.md §2.3, §2.9), like python/rmqstore/format/compression.py.
  *
  * Applies when sysFlag bit 0 is set; the type is `(sysFlag & 0x700) >> 8`: 0 (legacy) and 3 = zlib
  * stream, 1 = LZ4 frame, 2 = zstd frame. An empty stored body stays empty, as in RocketMQ's
  * `MessageDecoder` (it only decompresses a non-empty body). The decompressed size is capped: the
  * producer refuses a body over its `maxMessageSize` before compressing it, so a body inflating past
  * the cap is corrupt; decompression stops shortly past the cap, so a bomb costs about the cap in memory.
  */
object Compression {

  /** Compression type bits 8-10 of sysFlag (§2.3). */
  def compressionType(sysFlag: Int): Int =
    (sysFlag & Layout.SysFlagCompressionTypeMask) >> Layout.CompressionTypeShift

  /** Whether a stored body of `length` bytes is decompressed: sysFlag bit 0 set and the body not empty. */
  def applies(sysFlag: Int, length: Int): Boolean = (sysFlag & Layout.SysFlagCompressed) != 0 && length > 0

  /** The body as the producer sent it: decompressed when sysFlag bit 0 is set and the body is not empty.
    *
    * Throws BodyDecompressionException naming the compression type when it is unknown, the data is
    * corrupt or truncated, or it inflates past `maxSize` bytes.
    */
  def decompress(body: Array[Byte], sysFlag: Int, maxSize: Int = Layout.MaxMessageSize): Array[Byte] = {
    if (!applies(sysFlag, body.length)) return body
    val kind = compressionType(sysFlag)
    def fail(cause: String, e: Throwable = null) =
      new BodyDecompressionException(s"cannot decompress body (compression type $kind): $cause", e)
    try
      kind match {
        case Layout.CompressionLz4 =>
          val (out, n) = Lz4Frame.decompress(body, scratch.get, grown(maxSize))
          finish(out, n, maxSize)
        case Layout.CompressionLegacyZlib | Layout.CompressionZlib =>
          val inflater = inflaters.get
          inflater.reset()
          readCapped(new InflaterInputStream(new ByteArrayInputStream(body), inflater, 8192), maxSize)
        case Layout.CompressionZstd =>
          readCapped(new ZstdInputStream(new ByteArrayInputStream(body), RecyclingBufferPool.INSTANCE), maxSize)
        case _ => throw new BodyDecompressionException(f"unknown compression type $kind in sysFlag $sysFlag%#x")
      }
    catch {
      case e: BodyDecompressionException => throw e
      case TooLarge => throw fail(tooBig(maxSize))
      case e @ (_: java.io.IOException | _: RuntimeException) => throw fail(e.getMessage, e)
    }
  }

  private def tooBig(limit: Int): String =
    s"body inflates past $limit bytes (the cap on a decompressed body; the producer refuses " +
      "bodies over maxMessageSize before compressing them)"

  // Thrown inside a decompressor when the output passes the cap; turned into the message above.
  private object TooLarge extends RuntimeException(null, null, false, false)

  // One growing output buffer per thread: a scan decompresses many bodies, allocating only the results.
  // Buffers grown past KeptScratchBytes serve one body and are dropped.
  private final val KeptScratchBytes = 8 << 20
  private val scratch = ThreadLocal.withInitial[Array[Byte]](() => new Array[Byte](64 << 10))
  private val inflaters = ThreadLocal.withInitial[Inflater](() => new Inflater())

  // The scratch array grown to hold `needed` bytes; refused once the output is past the cap.
  private def grown(maxSize: Int)(out: Array[Byte], needed: Int): Array[Byte] = {
    if (needed.toLong > maxSize.toLong + (4 << 20)) throw TooLarge
    val size = math.max(needed.toLong, math.min(2L * out.length, Int.MaxValue - 8L)).toInt
    val bigger = java.util.Arrays.copyOf(out, size)
    if (bigger.length <= KeptScratchBytes) scratch.set(bigger)
    bigger
  }

  private def finish(out: Array[Byte], n: Int, maxSize: Int): Array[Byte] =
    if (n > maxSize) throw TooLarge else java.util.Arrays.copyOf(out, n)

  private def readCapped(in: InputStream, maxSize: Int): Array[Byte] =
    try {
      var out = scratch.get
      var n = 0
      var got = 0
      while (got >= 0) {
        if (n == out.length) out = grown(maxSize)(out, n + 1)
        got = in.read(out, n, out.length - n)
        if (got > 0) n += got
      }
      finish(out, n, maxSize)
    } finally in.close()
}
