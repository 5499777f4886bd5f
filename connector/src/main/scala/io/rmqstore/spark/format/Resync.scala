package io.rmqstore.spark.format

import java.nio.ByteBuffer

/** Find the next record boundary from an arbitrary byte position of a commit-log segment (§2.2, §2.6),
  * like python/rmqstore/format/resync.py.
  *
  * A position p is a record start when the record there passes `RecordCheck` with at least the
  * 91-byte minimum and its own PHYSICALOFFSET field equals the physical offset of p: a message body
  * would have to contain a whole self-consistent record header carrying its own offset to fake this.
  * A BLANK at p counts as a boundary only when its TOTALSIZE reaches exactly the segment end (what the
  * broker writes); it tells the caller that no record starts between p and the segment end.
  */
object Resync {

  /** The first p in [lo, hi) of `buf` where a record or the segment-ending BLANK starts, -1 if none.
    * `bufOffset` is the physical offset of `buf(0)`, `segmentEnd` the physical offset of the segment end.
    */
  def nextRecordStart(buf: ByteBuffer, lo: Int, hi: Int, bufOffset: Long, segmentEnd: Long): Int = {
    val limit = buf.limit()
    var p = math.max(lo, 0)
    val stop = math.min(hi, limit - 7)
    while (p < stop) {
      val b = buf.get(p + 4)
      if (b == 0xda.toByte) {
        val magic = buf.getInt(p + 4)
        if (
          (magic == Layout.MagicV1 || magic == Layout.MagicV2) &&
          RecordCheck.check(buf, p, limit, verifyCrc = false, bufOffset + p) >= Layout.MinRecordSize
        ) return p
      } else if (
        b == 0xcb.toByte && buf.getInt(p + 4) == Layout.BlankMagic && buf.getInt(p) == segmentEnd - bufOffset - p
      )
        return p
      p += 1
    }
    -1
  }
}
