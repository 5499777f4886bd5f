package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.US_ASCII
import java.util.zip.CRC32

import io.rmqstore.spark.format.Layout._

/** The broker's validity check of one record, `CommitLog.checkMessageAndReturnSize` (docs/format.md §2.12),
  * mirroring python/rmqstore/format/record.py `check_record` including its error wording.
  *
  * `check` returns the TOTALSIZE (> 0) of a valid record, 0 for the end-of-segment BLANK, or a negative
  * code; `describe` re-runs the check and says why in Python's words (positions are buffer indices).
  * Only the bytes in [pos, limit) are read.
  */
object RecordCheck {
  final val Blank = 0
  final val TooShort = -1
  final val PastEnd = -2
  final val BadMagic = -3
  final val NegativeSize = -4
  final val FieldPastEnd = -5
  final val BodyTooLong = -6
  final val BodyCrcMismatch = -7
  final val BadTopicLength = -8
  final val PropertiesTooLong = -9
  final val BadDelay = -10
  final val NoUsableCrcProperty = -11
  final val RecordCrcMismatch = -12
  final val NoCrcProperty = -13
  final val LengthMismatch = -14
  final val PhysicalOffsetMismatch = -15
  final val TooSmall = -16
  final val BeforeBufferStart = -17

  /** Not a record check: the record is whole but the DLedger entry header before it is not (§2.13). */
  final val BadEntryHeader = -18

  /** `expectedPhysicalOffset` value meaning "do not compare PHYSICALOFFSET". */
  final val AnyOffset = Long.MinValue

  private val ScheduleTopicBytes = ScheduleTopic.getBytes(US_ASCII)
  private val DelayName = PropertyDelay.getBytes(US_ASCII)
  private val CrcName = Crc32PropertyName.getBytes(US_ASCII)

  /** What the failing check saw, filled only when `describe` asks. */
  private final class Detail {
    var at = 0
    var a = 0L
    var b = 0L
    var text: String = null
  }

  /** Validate the record at `pos` (never throws).
    *
    * `verifyCrc` checks BODYCRC (recovery's `checkCRCOnRecover`); `verifyPropCrc` is the broker's
    * `forceVerifyPropCRC`: with `verifyCrc` the `__CRC32#` record CRC is checked instead of BODYCRC.
    * `expectedPhysicalOffset` (unless `AnyOffset`) adds the sanity check PHYSICALOFFSET == that value.
    */
  def check(
      buf: ByteBuffer,
      pos: Int,
      limit: Int,
      verifyCrc: Boolean,
      expectedPhysicalOffset: Long = AnyOffset,
      verifyPropCrc: Boolean = false
  ): Int = run(buf, pos, limit, verifyCrc, verifyPropCrc, expectedPhysicalOffset, null)

  /** A short text for a code returned by `check`. */
  def reason(code: Int): String = code match {
    case Blank => "BLANK (end-of-segment) record"
    case TooShort => "too few bytes left for a record"
    case PastEnd => "TOTALSIZE runs past the end of the buffer"
    case BadMagic => "bad magic code"
    case NegativeSize => "negative TOTALSIZE"
    case FieldPastEnd => "a field runs past the end of the buffer"
    case BodyTooLong => "BODYLENGTH exceeds TOTALSIZE"
    case BodyCrcMismatch => "BODYCRC mismatch"
    case BadTopicLength => "bad TOPICLENGTH"
    case PropertiesTooLong => "PROPERTIESLENGTH exceeds TOTALSIZE"
    case BadDelay => s"$ScheduleTopic record with a non-integer DELAY"
    case NoUsableCrcProperty => s"no usable $Crc32PropertyName property"
    case RecordCrcMismatch => "record CRC mismatch"
    case NoCrcProperty => s"no $Crc32PropertyName property"
    case LengthMismatch => "TOTALSIZE differs from its fields' total length"
    case PhysicalOffsetMismatch => "PHYSICALOFFSET field does not match the record's physical offset"
    case TooSmall => s"TOTALSIZE below the $MinRecordSize-byte minimum"
    case BeforeBufferStart => "TOTALSIZE reaches before the buffer start"
    case BadEntryHeader => "bad DLedger entry header"
    case c if c > 0 => "valid record"
    case c => s"unknown check code $c"
  }

  /** Why the record at `pos` fails `check`, in python/rmqstore/format/record.py's words. */
  def describe(
      buf: ByteBuffer,
      pos: Int,
      limit: Int,
      verifyCrc: Boolean,
      expectedPhysicalOffset: Long = AnyOffset,
      verifyPropCrc: Boolean = false
  ): String = {
    val d = new Detail
    val code = run(buf, pos, limit, verifyCrc, verifyPropCrc, expectedPhysicalOffset, d)
    code match {
      case TooShort => s"only ${math.max(limit - pos, 0)} bytes left at position $pos, a record needs more than 4"
      case PastEnd => s"TOTALSIZE ${d.a} at position $pos runs past the end of the buffer (${limit - pos} bytes left)"
      case BadMagic => f"bad magic code 0x${d.a.toInt}%08x at position ${pos + OffMagic}"
      case NegativeSize => s"negative TOTALSIZE ${d.a} at position $pos"
      case FieldPastEnd => s"${d.text} at position ${d.at} (${d.a} bytes) runs past the end of the buffer"
      case BodyTooLong => s"BODYLENGTH ${d.a} at position ${d.at} exceeds TOTALSIZE ${d.b}"
      case BodyCrcMismatch => s"BODYCRC mismatch at position $pos: stored ${d.a}, body has ${d.b}"
      case BadTopicLength => s"bad TOPICLENGTH ${d.a} at position ${d.at}"
      case PropertiesTooLong => s"PROPERTIESLENGTH ${d.a} at position ${d.at} exceeds TOTALSIZE ${d.b}"
      case BadDelay => s"$ScheduleTopic record with a non-integer DELAY '${d.text}' at position ${d.at}"
      case NoUsableCrcProperty => s"no usable $Crc32PropertyName property at position ${d.at}"
      case RecordCrcMismatch =>
        s"record CRC mismatch at position ${d.at}: $Crc32PropertyName says ${d.a}, got ${d.b}"
      case NoCrcProperty => s"record at position $pos has no $Crc32PropertyName property"
      case LengthMismatch => s"TOTALSIZE ${d.a} at position $pos differs from its fields' total length ${d.b}"
      case PhysicalOffsetMismatch =>
        s"PHYSICALOFFSET field ${d.a} at position $pos does not match the record's physical offset ${d.b}"
      case c if c > 0 && c < MinRecordSize => s"record at position $pos fails the structural checks (TOTALSIZE $c)"
      case BeforeBufferStart => s"TOTALSIZE ${d.a} reaches before the buffer start"
      case c => reason(c)
    }
  }

  /** BODYCRC / record CRC: `java.util.zip.CRC32` masked with 0x7FFFFFFF (§2.7). */
  def crc(buf: ByteBuffer, pos: Int, len: Int): Int = {
    val c = new CRC32
    c.update(buf.duplicate().limit(pos + len).position(pos))
    (c.getValue & 0x7fffffff).toInt
  }

  // One walk in the order of checkMessageAndReturnSize; `d` (null on the fast path) records details.
  private def run(
      buf: ByteBuffer,
      pos: Int,
      limit: Int,
      verifyCrc: Boolean,
      verifyPropCrc: Boolean,
      expectedPhy: Long,
      d: Detail
  ): Int = {
    if (pos < 0 || limit - pos <= 4) return TooShort
    val totalSize = buf.getInt(pos)
    if (limit - pos < totalSize) { if (d != null) d.a = totalSize; return PastEnd }
    if (limit - pos < 8) return field(d, pos + 4, 4, "MAGICCODE")
    val magic = buf.getInt(pos + OffMagic)
    if (magic == BlankMagic) return Blank
    if (magic != MagicV1 && magic != MagicV2) { if (d != null) d.a = magic & 0xffffffffL; return BadMagic }
    if (totalSize < 0) { if (d != null) d.a = totalSize; return NegativeSize }
    if (limit - pos < OffBornHost) return fixedField(d, pos, limit)
    val sysFlag = buf.getInt(pos + OffSysFlag)
    val bornLen = bornHostLen(sysFlag)
    val storeLen = storeHostLen(sysFlag)
    val bodyLenAt = pos + 68 + bornLen + storeLen
    if (bodyLenAt + 4 > limit) return hostFields(d, pos, limit, bornLen, storeLen)
    val bodyLen = buf.getInt(bodyLenAt)
    var at = bodyLenAt + 4
    if (bodyLen > 0) {
      if (bodyLen > totalSize) {
        if (d != null) { d.a = bodyLen; d.at = bodyLenAt; d.b = totalSize }; return BodyTooLong
      }
      if (at + bodyLen > limit) return field(d, at, bodyLen, "BODY")
      if (verifyCrc && !verifyPropCrc) {
        val actual = crc(buf, at, bodyLen)
        val stored = buf.getInt(pos + OffBodyCrc)
        if (actual != stored) { if (d != null) { d.a = stored; d.b = actual }; return BodyCrcMismatch }
      }
      at += bodyLen
    }
    val topicWidth = topicLengthWidth(magic)
    if (at + topicWidth > limit) return field(d, at, topicWidth, "TOPICLENGTH")
    val topicLen = if (topicWidth == 2) buf.getShort(at).toInt else buf.get(at).toInt
    if (topicLen < 0 || topicLen > totalSize) { if (d != null) { d.a = topicLen; d.at = at }; return BadTopicLength }
    val topicAt = at + topicWidth
    if (topicAt + topicLen > limit) return field(d, topicAt, topicLen, "TOPIC")
    at = topicAt + topicLen
    if (at + 2 > limit) return field(d, at, 2, "PROPERTIESLENGTH")
    val propsLen = buf.getShort(at).toInt
    val propsAt = at + 2
    if (propsLen > 0) {
      if (propsLen > totalSize) {
        if (d != null) { d.a = propsLen; d.at = at; d.b = totalSize }; return PropertiesTooLong
      }
      if (propsAt + propsLen > limit) return field(d, propsAt, propsLen, "PROPERTIES")
      val schedule = topicLen == ScheduleTopicBytes.length && sameBytes(buf, topicAt, ScheduleTopicBytes)
      if (verifyPropCrc || schedule) {
        val props =
          propertyChecks(buf, propsAt, propsLen, schedule, verifyPropCrc && verifyCrc, propsAt + propsLen, totalSize, d)
        if (props < 0) return props
      }
    } else if (verifyPropCrc && verifyCrc) return NoCrcProperty
    val computed = recordLength(sysFlag, magic, bodyLen, topicLen, propsLen)
    if (computed != totalSize) { if (d != null) { d.a = totalSize; d.b = computed }; return LengthMismatch }
    if (expectedPhy != AnyOffset) {
      val phy = buf.getLong(pos + OffPhysicalOffset)
      if (phy != expectedPhy) { if (d != null) { d.a = phy; d.b = expectedPhy }; return PhysicalOffsetMismatch }
    }
    totalSize
  }

  /** §2.12 steps 6-7: a schedule-topic DELAY must be a Java int; the `__CRC32#` record CRC. */
  private def propertyChecks(
      buf: ByteBuffer,
      propsAt: Int,
      propsLen: Int,
      schedule: Boolean,
      verifyCrc: Boolean,
      end: Int,
      totalSize: Int,
      d: Detail
  ): Int = {
    if (schedule) {
      val delay = Properties.find(buf, propsAt, propsLen, DelayName)
      if (delay != null && parseJavaInt(delay).isEmpty) {
        if (d != null) { d.text = delay; d.at = propsAt }
        return BadDelay
      }
    }
    if (!verifyCrc) return 0
    val expected = Properties.expectedRecordCrc(Properties.find(buf, propsAt, propsLen, CrcName))
    if (expected <= 0) { if (d != null) d.at = propsAt; return NoUsableCrcProperty }
    val start = end - totalSize
    if (start < 0) { if (d != null) d.a = totalSize; return BeforeBufferStart }
    val actual = crc(buf, start, totalSize - Crc32ReservedLen)
    if (actual != expected) { if (d != null) { d.at = start; d.a = expected; d.b = actual }; return RecordCrcMismatch }
    0
  }

  /** `Integer.parseInt` for plain decimal text (optional sign); None where Java would throw. */
  def parseJavaInt(text: String): Option[Int] = {
    val digits = if (text.startsWith("+") || text.startsWith("-")) text.substring(1) else text
    if (digits.isEmpty || !digits.forall(c => c >= '0' && c <= '9')) None
    else {
      val v = BigInt(text.stripPrefix("+"))
      if (v >= Int.MinValue && v <= Int.MaxValue) Some(v.toInt) else None
    }
  }

  private def sameBytes(buf: ByteBuffer, pos: Int, bytes: Array[Byte]): Boolean = {
    var i = 0
    while (i < bytes.length) {
      if (buf.get(pos + i) != bytes(i)) return false
      i += 1
    }
    true
  }

  private def field(d: Detail, at: Int, n: Int, name: String): Int = {
    if (d != null) { d.at = at; d.a = n; d.text = name }
    FieldPastEnd
  }

  // The fixed fields before the born host, in order: the first one that does not fit.
  private def fixedField(d: Detail, pos: Int, limit: Int): Int = {
    val fields = Seq(
      (OffBodyCrc, 4, "BODYCRC"),
      (OffQueueId, 4, "QUEUEID"),
      (OffFlag, 4, "FLAG"),
      (OffQueueOffset, 8, "QUEUEOFFSET"),
      (OffPhysicalOffset, 8, "PHYSICALOFFSET"),
      (OffSysFlag, 4, "SYSFLAG"),
      (OffBornTimestamp, 8, "BORNTIMESTAMP")
    )
    val (off, n, name) = fields.find { case (o, n, _) => pos + o + n > limit }.get
    field(d, pos + off, n, name)
  }

  private def hostFields(d: Detail, pos: Int, limit: Int, bornLen: Int, storeLen: Int): Int = {
    val storeTs = OffBornHost + bornLen
    val fields = Seq(
      (OffBornHost, bornLen, "BORNHOST"),
      (storeTs, 8, "STORETIMESTAMP"),
      (storeTs + 8, storeLen, "STOREHOSTADDRESS"),
      (storeTs + 8 + storeLen, 4, "RECONSUMETIMES"),
      (storeTs + 12 + storeLen, 8, "PREPAREDTRANSACTIONOFFSET"),
      (storeTs + 20 + storeLen, 4, "BODYLENGTH")
    )
    val (off, n, name) = fields.find { case (o, n, _) => pos + o + n > limit }.get
    field(d, pos + off, n, name)
  }
}
