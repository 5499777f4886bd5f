package io.rmqstore.spark.format

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, InputStream}
import java.util.zip.InflaterInputStream

import com.github.luben.zstd.ZstdInputStream
import net.jpountz.lz4.LZ4FrameInputStream

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
    val raw = new ByteArrayInputStream(body)
    val in: InputStream =
      try {
        kind match {
          case Layout.CompressionLegacyZlib | Layout.CompressionZlib => new InflaterInputStream(raw)
          case Layout.CompressionLz4 => new LZ4FrameInputStream(raw)
          case Layout.CompressionZstd => new ZstdInputStream(raw)
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

  private def readCapped(in: InputStream, kind: Int): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val chunk = new Array[Byte](64 << 10)
    var n = in.read(chunk)
    while (n >= 0) {
      if (out.size.toLong + n > MaxDecompressedBytes)
        throw new IllegalArgumentException(
          s"cannot decompress body (compression type $kind): more than $MaxDecompressedBytes bytes"
        )
      out.write(chunk, 0, n)
      n = in.read(chunk)
    }
    out.toByteArray
  }
}
