package io.rmqstore.spark.format

import java.nio.ByteBuffer

/** ConsumeQueue units: 20 bytes (phyOffset long, TOTALSIZE int, tagsCode long) (docs/format.md §4.1-§4.4). */
object ConsumeQueueUnit {
  final val Size = Layout.CqUnitSize

  /** Size field of a pre-blank filler unit `(0, Integer.MAX_VALUE, 0)` (§4.3). */
  final val FillerSize = Int.MaxValue

  /** tagsCode values <= Integer.MIN_VALUE - 1 are ConsumeQueueExt addresses (§4.2, §4.4). */
  final val ExtAddressMax: Long = Int.MinValue.toLong - 1

  /** `mappedFileSizeConsumeQueue` default: 300,000 units. */
  final val DefaultSegmentSize = 300000 * Size

  def phyOffset(buf: ByteBuffer, pos: Int): Long = buf.getLong(pos)
  def size(buf: ByteBuffer, pos: Int): Int = buf.getInt(pos + 8)
  def tagsCode(buf: ByteBuffer, pos: Int): Long = buf.getLong(pos + 12)

  /** Recovery's rule: a unit with phyOffset >= 0 and size > 0 is valid; the first other one ends the queue. */
  def isValid(buf: ByteBuffer, pos: Int): Boolean = phyOffset(buf, pos) >= 0 && size(buf, pos) > 0

  /** Continue the search for the end of a queue file over `units`, its units from index `first`, given the index
    * `last` of the last valid unit before them (-1: none): (the last valid unit's index so far, whether the end is
    * found, a run of `ContractLayout.UnitDamageLookahead` invalid units after it) (python `extend_queue_end`).
    */
  def extendQueueEnd(units: ByteBuffer, first: Long, last: Long): (Long, Boolean) = {
    val n = units.limit() / Size
    var (i, valid, ended) = (0, last, false)
    while (!ended && i < n) {
      if (isValid(units, i * Size)) valid = first + i
      else ended = first + i - valid >= ContractLayout.UnitDamageLookahead
      i += 1
    }
    (valid, ended)
  }

  /** A pre-blank filler unit `(0, 0x7FFFFFFF, 0)` (§4.3). */
  def isFiller(buf: ByteBuffer, pos: Int): Boolean =
    size(buf, pos) == FillerSize && phyOffset(buf, pos) == 0 && tagsCode(buf, pos) == 0

  /** True when tagsCode is a ConsumeQueueExt address, i.e. <= -2147483649 (§4.2). */
  def isExtAddress(tagsCode: Long): Boolean = tagsCode <= ExtAddressMax
}

/** BatchConsumeQueue units, 46 bytes (§4.5): phyOffset long, size int, tagsCode long, storeTime long,
  * msgBaseOffset long, batchSize short, compactedOffset int, reserved int.
  */
object BatchConsumeQueueUnit {
  final val Size = 46

  def phyOffset(buf: ByteBuffer, pos: Int): Long = buf.getLong(pos)
  def size(buf: ByteBuffer, pos: Int): Int = buf.getInt(pos + 8)
  def tagsCode(buf: ByteBuffer, pos: Int): Long = buf.getLong(pos + 12)
  def baseOffset(buf: ByteBuffer, pos: Int): Long = buf.getLong(pos + 28)
  def batchSize(buf: ByteBuffer, pos: Int): Int = buf.getShort(pos + 36).toInt

  /** `BatchConsumeQueue.recover`'s rule: phyOffset >= 0, size > 0, msgBaseOffset >= 0, batchSize > 0. */
  def isValid(buf: ByteBuffer, pos: Int): Boolean =
    phyOffset(buf, pos) >= 0 && size(buf, pos) > 0 && baseOffset(buf, pos) >= 0 && batchSize(buf, pos) > 0
}
