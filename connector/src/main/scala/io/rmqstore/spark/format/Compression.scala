package io.rmqstore.spark.format

import java.io.{ByteArrayInputStream, InputStream}
import java.util.zip.{Inflater, InflaterInputStream}

import com.github.luben.zstd.{RecyclingBufferPool, ZstdInputStream}

/** Producer-side body compression (spec §2.3, §2.9).
  *
  * Applies when sysFlag bit 0 is set; the type is `(sysFlag & 0x700) >> 8`: 0 (legacy) and 3 = zlib
  * stream, 1 = LZ4 frame, 2 = zstd frame. An empty stored body stays empty, as in RocketMQ's
  * `MessageDecoder` (it only decompresses a non-empty body).
  */
object Compression {

  /** Largest decompressed body accepted: a corrupt or hostile body cannot exhaust the executor heap. */
  final val MaxDecompressedBytes: Int = 64 << 20

  /** Compression type bits 8-10 of sysFlag (§2.3). */
  def compressionType(sysFlag: Int): Int = (sysFlag & Layout.SysFlagCompressionTypeMask) >> Layout.CompressionTypeShift

  /** The body as the producer sent it: decompressed when sysFlag bit 0 is set and the body is not empty.
    *
    * Throws IllegalArgumentException naming the compression type when it is unknown, the data is
    * corrupt or truncated, or it decompresses to more than `MaxDecompressedBytes`.
    */
  def decompress(body: Array[Byte], sysFlag: Int): Array[Byte] = {
    if ((sysFlag & Layout.SysFlagCompressed) == 0 || body.length == 0) return body
    val kind = compressionType(sysFlag)
    if (kind == Layout.CompressionLz4) return lz4(body)
    val raw = new ByteArrayInputStream(body)
    val in: InputStream =
      try {
        kind match {
          case Layout.CompressionLegacyZlib | Layout.CompressionZlib =>
            val inflater = inflaters.get
            inflater.reset()
            new InflaterInputStream(raw, inflater, 8192)
          case Layout.CompressionZstd => new ZstdInputStream(raw, RecyclingBufferPool.INSTANCE)
          case _ =>
            throw new IllegalArgumentException(f"unknown compression type $kind in sysFlag $sysFlag%#x")
        }
      } catch {
        case e: java.io.IOException => throw failure(kind, e)
      }
    try readCapped(in, kind)
    catch {
      case e: IllegalArgumentException => throw e
      case e @ (_: java.io.IOException | _: RuntimeException) => throw failure(kind, e)
    } finally in.close()
  }

  private def failure(kind: Int, e: Throwable): IllegalArgumentException =
    new IllegalArgumentException(s"cannot decompress body (compression type $kind): ${e.getMessage}", e)

  // One growing output buffer per thread: a scan decompresses many bodies, allocating only the results.
  // Buffers grown past KeptScratchBytes serve one body and are dropped.
  private final val KeptScratchBytes = 8 << 20
  private val scratch = ThreadLocal.withInitial[Array[Byte]](() => new Array[Byte](64 << 10))

  private def tooLarge(kind: Int) =
    new IllegalArgumentException(
      s"cannot decompress body (compression type $kind): more than $MaxDecompressedBytes bytes"
    )

  private val inflaters = ThreadLocal.withInitial[Inflater](() => new Inflater())

  private def lz4(body: Array[Byte]): Array[Byte] =
    try {
      val (out, n) = Lz4Frame.decompress(body, scratch.get, grown(Layout.CompressionLz4))
      if (n > MaxDecompressedBytes) throw tooLarge(Layout.CompressionLz4)
      java.util.Arrays.copyOf(out, n)
    } catch { case e: java.io.IOException => throw failure(Layout.CompressionLz4, e) }

  // The scratch array grown to hold `needed` bytes, refused past the cap.
  private def grown(kind: Int)(out: Array[Byte], needed: Int): Array[Byte] = {
    if (needed > MaxDecompressedBytes + (4 << 20)) throw tooLarge(kind)
    val bigger = java.util.Arrays.copyOf(out, math.max(needed, math.min(2L * out.length, Int.MaxValue - 8L).toInt))
    if (bigger.length <= KeptScratchBytes) scratch.set(bigger)
    bigger
  }

  private def readCapped(in: InputStream, kind: Int): Array[Byte] = {
    var out = scratch.get
    var n = 0
    var got = 0
    while (got >= 0) {
      if (n == out.length) out = grown(kind)(out, n + 1)
      got = in.read(out, n, out.length - n)
      if (got > 0) n += got
    }
    if (n > MaxDecompressedBytes) throw tooLarge(kind)
    java.util.Arrays.copyOf(out, n)
  }
}
