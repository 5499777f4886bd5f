package io.rmqstore.spark.format

/** The commit-log record layout (docs/format.md §2.2-§2.6), big-endian throughout: the constants are
  * `ContractLayout` (generated from docs/contract.toml), the rules below python/rmqstore/format/layout.py's.
  *
  * The fixed header depends on two sysFlag bits (IPv6 born host, IPv6 store host); everything after
  * the store host moves with them.
  */
object Layout extends ContractLayout {

  /** Whether a record of this sysFlag gets a consume-queue unit (§4.1): not a transaction, or COMMIT;
    * PREPARED and ROLLBACK records keep queueOffset 0 and are in no queue.
    */
  def isQueued(sysFlag: Int): Boolean = {
    val transaction = sysFlag & SysFlagTransactionMask
    transaction == TransactionNotType || transaction == TransactionCommit
  }

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
