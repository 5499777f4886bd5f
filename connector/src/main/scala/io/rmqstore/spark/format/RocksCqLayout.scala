package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets

/** Keys and values of RocketMQ's RocksDB consume queue (§4.7, `storeType=defaultRocksDB`), like
  * python/rmqstore/format/rocksdbcq.py. Big-endian integers, UTF-8 topic names.
  */
object RocksCqLayout {

  /** Separator between key fields (`AbstractRocksDBStorage.CTRL_1`). */
  final val Ctrl1: Byte = 1

  /** Column family of the per-queue min/max table; the units are in `default`. */
  final val OffsetFamily = "offset"
  final val MaxTag = "max"
  final val MinTag = "min"
  final val UnitValueSize = 28
  final val OffsetValueSize = 16

  /** Size, CTRL_1, topic, CTRL_1, queueId, CTRL_1: what every unit key of (topic, queueId) starts with. */
  def queueKeyPrefix(topic: String, queueId: Int): Array[Byte] = {
    val name = topic.getBytes(StandardCharsets.UTF_8)
    ByteBuffer.allocate(4 + 1 + name.length + 1 + 4 + 1).putInt(name.length).put(Ctrl1).put(name).put(Ctrl1)
      .putInt(queueId).put(Ctrl1).array()
  }

  /** The unit key of `queueOffset`: keys of a queue sort by queue offset. */
  def unitKey(topic: String, queueId: Int, queueOffset: Long): Array[Byte] = {
    val prefix = queueKeyPrefix(topic, queueId)
    ByteBuffer.allocate(prefix.length + 8).put(prefix).putLong(queueOffset).array()
  }

  /** The queue offset of a unit key (its last 8 bytes). */
  def queueOffsetOf(key: Array[Byte]): Long = ByteBuffer.wrap(key, key.length - 8, 8).getLong

  /** An offset-table entry: (topic, "max"/"min", queueId, phyOffset, queue offset); None for the checkpoint
    * entry (8-byte value) and keys not in the layout, which RocketMQ skips too.
    */
  def offsetEntry(key: Array[Byte], value: Array[Byte]): Option[(String, String, Int, Long, Long)] = {
    if (key.length < 14 || value.length != OffsetValueSize) return None
    val k = ByteBuffer.wrap(key)
    val length = k.getInt(0)
    if (length < 0 || key.length != 4 + 1 + length + 1 + 3 + 1 + 4) return None
    val topic = new String(key, 5, length, StandardCharsets.UTF_8)
    val tag = new String(key, 6 + length, 3, StandardCharsets.UTF_8)
    val v = ByteBuffer.wrap(value)
    Some((topic, tag, k.getInt(10 + length), v.getLong(0), v.getLong(8)))
  }
}
