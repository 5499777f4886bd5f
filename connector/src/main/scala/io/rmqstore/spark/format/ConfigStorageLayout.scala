package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.{CharacterCodingException, CodingErrorAction, StandardCharsets}

/** Keys and values of the consumer-offset table of RocketMQ's v2 config storage (§4.8, `config/rdb/`,
  * `ConfigStorage` + `ConsumerOffsetManagerV2`, configManagerVersion=v2), like
  * python/rmqstore/format/configstorage.py. Big-endian integers, UTF-8 names.
  */
object ConfigStorageLayout {

  /** `TablePrefix.TABLE`: the first byte of every table's key. */
  final val TablePrefix: Byte = 1

  /** `TableId.CONSUMER_OFFSET` (2 bytes); pull offsets (2), topics (3), subscription groups (4) are other tables. */
  final val ConsumerOffsetTable: Short = 1

  /** `RecordPrefix.DATA`; `DATA_VERSION` (1) keys the table's data version. */
  final val DataRecord: Byte = 2

  /** Separator byte between key fields (`AbstractRocksDBStorage.CTRL_1`). */
  final val Ctrl1: Byte = 1
  final val OffsetValueSize = 8

  private def tableHead(record: Int): Array[Byte] =
    ByteBuffer.allocate(4).put(TablePrefix).putShort(ConsumerOffsetTable).put(record.toByte).array()

  /** The key range `ConsumerOffsetManagerV2.loadConsumerOffsets` iterates: every consumer-offset record. */
  val ConsumerOffsetsLower: Array[Byte] = tableHead(DataRecord)
  val ConsumerOffsetsUpper: Array[Byte] = tableHead(DataRecord + 1)

  /** (group, topic, queueId, offset) of one consumer-offset record: key `[1][0001][2][group length (2)][group][01]
    * [topic length (2)][topic][01][queueId (4)]`, value the offset (8). IllegalArgumentException saying what does
    * not fit the layout.
    */
  def consumerOffset(key: Array[Byte], value: Array[Byte]): (String, String, Int, Long) = {
    if (value.length != OffsetValueSize)
      throw new IllegalArgumentException(s"value is ${value.length} bytes, not an $OffsetValueSize-byte offset")
    if (!key.startsWith(ConsumerOffsetsLower)) throw new IllegalArgumentException("not a consumer-offset record key")
    val (group, afterGroup) = name(key, ConsumerOffsetsLower.length, "group")
    val (topic, at) = name(key, afterGroup, "topic")
    if (key.length != at + 4)
      throw new IllegalArgumentException(
        s"${key.length - at} bytes after the topic's separator, not a 4-byte queue id"
      )
    (group, topic, ByteBuffer.wrap(key).getInt(at), ByteBuffer.wrap(value).getLong)
  }

  /** The length-prefixed UTF-8 name at `at` and the offset after the CTRL_1 that ends it. */
  private def name(key: Array[Byte], at: Int, what: String): (String, Int) = {
    if (key.length < at + 2) throw new IllegalArgumentException(s"ends before the $what length")
    val length = ByteBuffer.wrap(key).getShort(at) & 0xffff
    val end = at + 2 + length
    if (key.length <= end || key(end) != Ctrl1)
      throw new IllegalArgumentException(s"$what length $length does not end at a CTRL_1 separator")
    val decoder = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
    try ((decoder.decode(ByteBuffer.wrap(key, at + 2, length)).toString, end + 1))
    catch { case e: CharacterCodingException => throw new IllegalArgumentException(s"$what is not UTF-8: $e") }
  }
}
