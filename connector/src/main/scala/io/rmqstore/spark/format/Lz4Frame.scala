package io.rmqstore.spark.format

import net.jpountz.lz4.{LZ4Exception, LZ4Factory}
import net.jpountz.xxhash.XXHashFactory

/** LZ4 frame decoding (the format `LZ4FrameOutputStream` writes for RocketMQ's `Lz4Compressor`, §2.9)
  * into a reused output array. `LZ4FrameInputStream` allocates a block buffer per body (4 MiB with the
  * default block size), so it is not used on the scan path; the accepted input is the same: version 01,
  * independent blocks, header, block and content checksums verified, skippable frames skipped.
  */
private[format] object Lz4Frame {
  private final val Magic = 0x184d2204
  private final val SkippableMagicMask = 0xfffffff0
  private final val SkippableMagic = 0x184d2a50
  private val decompressor = LZ4Factory.fastestInstance().safeDecompressor()
  private val xxhash = XXHashFactory.fastestInstance()

  private def fail(message: String) = throw new java.io.IOException(message)

  private def intLE(src: Array[Byte], at: Int): Int =
    (src(at) & 0xff) | (src(at + 1) & 0xff) << 8 | (src(at + 2) & 0xff) << 16 | (src(at + 3) & 0xff) << 24

  /** Decompress every frame of `src` into `out` (grown through `grow(needed)`, which may refuse past a
    * cap by throwing); returns the decompressed length. IOException for malformed or truncated input.
    */
  def decompress(
      src: Array[Byte],
      initial: Array[Byte],
      grow: (Array[Byte], Int) => Array[Byte]
  ): (Array[Byte], Int) = {
    var out = initial
    var n = 0
    var at = 0
    def need(k: Int): Unit = if (at + k > src.length) fail("Stream ended prematurely")
    while (at < src.length) {
      need(4)
      val magic = intLE(src, at)
      at += 4
      if ((magic & SkippableMagicMask) == SkippableMagic) {
        need(4)
        val skip = intLE(src, at)
        at += 4
        if (skip < 0) fail("Invalid skippable frame size")
        need(skip)
        at += skip
      } else {
        if (magic != Magic) fail(f"Invalid frame magic number 0x$magic%08X")
        need(3)
        val descriptor = at
        val flg = src(at) & 0xff
        val bd = src(at + 1) & 0xff
        if ((flg >>> 6) != 1) fail("Frame version unsupported")
        if ((flg & 0x20) == 0) fail("Dependent block stream is unsupported (BLOCK_INDEPENDENCE flag is not set)")
        val blockChecksum = (flg & 0x10) != 0
        val contentChecksum = (flg & 0x04) != 0
        val maxBlock = ((bd >>> 4) & 7) match {
          case 4 => 64 << 10
          case 5 => 256 << 10
          case 6 => 1 << 20
          case 7 => 4 << 20
          case _ => fail("Invalid block size")
        }
        at += 2 + (if ((flg & 0x08) != 0) 8 else 0) + (if ((flg & 0x01) != 0) 4 else 0)
        need(1)
        val hc = (xxhash.hash32().hash(src, descriptor, at - descriptor, 0) >>> 8) & 0xff
        if (hc != (src(at) & 0xff)) fail("Frame descriptor checksum mismatch")
        at += 1
        val frameStart = n
        var blocks = true
        while (blocks) {
          need(4)
          val header = intLE(src, at)
          at += 4
          if (header == 0) blocks = false
          else {
            val size = header & 0x7fffffff
            if (size > maxBlock) fail("Block size exceeds the frame's maximum")
            need(size + (if (blockChecksum) 4 else 0))
            if (blockChecksum && xxhash.hash32().hash(src, at, size, 0) != intLE(src, at + size))
              fail("Block checksum mismatch")
            if (out.length - n < maxBlock) out = grow(out, n + maxBlock)
            if ((header & 0x80000000) != 0) {
              System.arraycopy(src, at, out, n, size)
              n += size
            } else
              try n += decompressor.decompress(src, at, size, out, n, maxBlock)
              catch { case e: LZ4Exception => fail(e.getMessage) }
            at += size + (if (blockChecksum) 4 else 0)
          }
        }
        if (contentChecksum) {
          need(4)
          if (xxhash.hash32().hash(out, frameStart, n - frameStart, 0) != intLE(src, at))
            fail("Content checksum mismatch")
          at += 4
        }
      }
    }
    (out, n)
  }
}
