package io.rmqstore.spark.format

/** Constants of the commit-log record layout (docs/format.md §2.2-§2.6), big-endian throughout.
  *
  * The fixed header depends on two sysFlag bits (IPv6 born host, IPv6 store host); everything after
  * the store host moves with them. Mirrors python/rmqstore/format/layout.py.
  */
object Layout {

  /** MESSAGE_MAGIC_CODE: 1-byte topic length (§2.5). */
  final val MagicV1 = 0xdaa320a7

  /** MESSAGE_MAGIC_CODE_V2 (5.1.0+): 2-byte topic length. */
  final val MagicV2 = 0xdaa320ab

  /** BLANK_MAGIC_CODE: end-of-segment filler whose TOTALSIZE covers the rest of the segment (§2.6). */
  final val BlankMagic = 0xcbd43194

  /** A record is written only if at least this many bytes remain after it in the segment (§2.6). */
  final val EndFileMinBlankLength = 8

  final val SysFlagCompressed = 0x001
  final val SysFlagTransactionMask = 0x00c
  final val TransactionNotType = 0x000
  final val TransactionCommit = 0x008
  final val TransactionRollback = 0x00c

  /** Whether a record of this sysFlag gets a consume-queue unit (§4.1): not a transaction, or COMMIT;
    * PREPARED and ROLLBACK records keep queueOffset 0 and are in no queue.
    */
  def isQueued(sysFlag: Int): Boolean = {
    val transaction = sysFlag & SysFlagTransactionMask
    transaction == TransactionNotType || transaction == TransactionCommit
  }
  final val SysFlagBornHostV6 = 0x010
  final val SysFlagStoreHostV6 = 0x020
  final val SysFlagCompressionTypeMask = 0x700
  final val CompressionTypeShift = 8

  // compression types: (sysFlag & 0x700) >> 8 (§2.3, §2.9); 0 is legacy zlib.
  final val CompressionLegacyZlib = 0
  final val CompressionLz4 = 1
  final val CompressionZstd = 2
  final val CompressionZlib = 3

  // Fixed-position fields, the same for every record (§2.2).
  final val OffTotalSize = 0
  final val OffMagic = 4
  final val OffBodyCrc = 8
  final val OffQueueId = 12
  final val OffFlag = 16
  final val OffQueueOffset = 20
  final val OffPhysicalOffset = 28
  final val OffSysFlag = 36
  final val OffBornTimestamp = 40
  final val OffBornHost = 48

  /** 4 address bytes + 4-byte port. */
  final val Ipv4HostLen = 8

  /** 16 address bytes + 4-byte port. */
  final val Ipv6HostLen = 20

  /** Smallest legal record: v4/v4 hosts, empty body, topic and properties (§2.2). */
  final val MinRecordSize = 91

  final val Crc32PropertyName = "__CRC32#"

  /** Length of the 5.2+ trailing `__CRC32#` property: name 8 + 0x01 + 10 digits + 0x02 (§2.8). */
  final val Crc32ReservedLen = 20

  final val PropertyNameValueSeparator: Byte = 1
  final val PropertySeparator: Byte = 2

  final val ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
  final val PropertyKeys = "KEYS"
  final val PropertyTags = "TAGS"
  final val PropertyUniqKey = "UNIQ_KEY"
  final val PropertyDelay = "DELAY"

  /** Width of BORNHOST: 20 bytes when sysFlag bit 4 is set, else 8 (§2.3). */
  def bornHostLen(sysFlag: Int): Int = if ((sysFlag & SysFlagBornHostV6) != 0) Ipv6HostLen else Ipv4HostLen

  /** Width of STOREHOSTADDRESS: 20 bytes when sysFlag bit 5 is set, else 8 (§2.3). */
  def storeHostLen(sysFlag: Int): Int = if ((sysFlag & SysFlagStoreHostV6) != 0) Ipv6HostLen else Ipv4HostLen

  /** TOPICLENGTH is 1 byte for v1 records and 2 bytes for v2 records (§2.5). */
  def topicLengthWidth(magic: Int): Int = if (magic == MagicV2) 2 else 1

  /** Position of STORETIMESTAMP inside a record: 48 + born host width (§2.2). */
  def storeTimestampOffset(sysFlag: Int): Int = OffBornHost + bornHostLen(sysFlag)

  /** Position of BODYLENGTH: 68 + born host width + store host width (§2.2). */
  def bodyLengthOffset(sysFlag: Int): Int = 68 + bornHostLen(sysFlag) + storeHostLen(sysFlag)

  /** TOTALSIZE for the given field lengths (`MessageExtEncoder.calMsgLength`, §2.2). */
  def recordLength(sysFlag: Int, magic: Int, bodyLen: Int, topicLen: Int, propertiesLen: Int): Int =
    bodyLengthOffset(sysFlag) + 4 + bodyLen + topicLengthWidth(magic) + topicLen + 2 + propertiesLen
}
