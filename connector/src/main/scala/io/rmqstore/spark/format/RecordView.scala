package io.rmqstore.spark.format

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.{US_ASCII, UTF_8}

import io.rmqstore.spark.format.Layout._

/** Lazy accessors over one record that passed `RecordCheck` (docs/format.md §2.2), one table row.
  *
  * Nothing is decoded until asked: numeric fields are read from the buffer on each call, strings and
  * the properties map are built once per record. Scans reuse one view (`reset`), so a view is valid
  * only until the next record; copy what must outlive it. `physicalOffset` is the record's position in
  * the log (checked equal to its PHYSICALOFFSET field by the store's walk).
  */
final class RecordView(private var buf: ByteBuffer, private var pos: Int, private var phy: Long) {
  private var sysFlagValue = 0
  private var bodyLenAt = 0
  private var tailKnown = false
  private var topicAtValue = 0
  private var topicLenValue = 0
  private var propsAtValue = 0
  private var propsLenValue = 0
  private var propsMap: java.util.LinkedHashMap[String, String] = null
  private var propsBytes = new Array[Byte](1024)
  private var propsCopied = false
  private val wellKnown = new Array[Int](2 * RecordView.WellKnownNames.length)
  private var wellKnownFound = false
  private var spans: Array[Int] = null
  private var spanCount = -1
  private val wellKnownText = new Array[String](RecordView.WellKnownNames.length)
  private var topicValue: String = null
  if (buf != null) reset(buf, pos, phy)

  /** An empty view for `reset`. */
  def this() = this(null, 0, 0L)

  /** Point this view at the record at `pos` of `buf`, physical offset `physicalOffset`. */
  def reset(buffer: ByteBuffer, position: Int, physicalOffset: Long): RecordView = {
    buf = buffer
    pos = position
    phy = physicalOffset
    sysFlagValue = buffer.getInt(position + OffSysFlag)
    bodyLenAt = position + bodyLengthOffset(sysFlagValue)
    tailKnown = false
    propsMap = null
    propsCopied = false
    wellKnownFound = false
    spanCount = -1
    java.util.Arrays.fill(wellKnownText.asInstanceOf[Array[AnyRef]], null)
    topicValue = null
    this
  }

  /** The buffer the record lies in (for copying raw bytes into columns). */
  def buffer: ByteBuffer = buf

  /** Index of the record's first byte in `buffer`. */
  def position: Int = pos

  def totalSize: Int = buf.getInt(pos)
  def magic: Int = buf.getInt(pos + OffMagic)
  def bodyCrc: Int = buf.getInt(pos + OffBodyCrc)
  def queueId: Int = buf.getInt(pos + OffQueueId)
  def flag: Int = buf.getInt(pos + OffFlag)
  def queueOffset: Long = buf.getLong(pos + OffQueueOffset)
  def physicalOffset: Long = phy
  def sysFlag: Int = sysFlagValue
  def bornTimestampMs: Long = buf.getLong(pos + OffBornTimestamp)
  def storeTimestampMs: Long = buf.getLong(pos + storeTimestampOffset(sysFlagValue))
  def reconsumeTimes: Int = buf.getInt(bodyLenAt - 12)
  def preparedTransactionOffset: Long = buf.getLong(bodyLenAt - 8)

  def bornHost: String = Hosts.decode(buf, pos + OffBornHost, bornHostLen(sysFlagValue))
  def storeHost: String = Hosts.decode(buf, storeHostAt, storeHostLen(sysFlagValue))

  /** offsetMsgId: store host bytes + physical offset in uppercase hex (§3.1). */
  def msgId: String = MsgId.offsetMsgId(buf, storeHostAt, storeHostLen(sysFlagValue), phy)

  /** `msgId` as ASCII into `out` at `off` (room for `MsgId.MaxLength`); returns its length. */
  def msgIdBytes(out: Array[Byte], off: Int): Int =
    MsgId.write(buf, storeHostAt, storeHostLen(sysFlagValue), phy, out, off)

  /** Index in `buffer` of BORNHOST (`bornHostLength` bytes, §2.4). */
  def bornHostPosition: Int = pos + OffBornHost
  def bornHostLength: Int = bornHostLen(sysFlagValue)

  /** Index in `buffer` of STOREHOSTADDRESS (`storeHostLength` bytes, §2.4). */
  def storeHostPosition: Int = storeHostAt
  def storeHostLength: Int = storeHostLen(sysFlagValue)

  /** `bornHost` as ASCII into `out` at `off` (room for `Hosts.MaxTextLength`); returns its length. */
  def bornHostBytes(out: Array[Byte], off: Int): Int =
    Hosts.write(buf, pos + OffBornHost, bornHostLen(sysFlagValue), out, off)

  /** `storeHost` as ASCII into `out` at `off` (room for `Hosts.MaxTextLength`); returns its length. */
  def storeHostBytes(out: Array[Byte], off: Int): Int =
    Hosts.write(buf, storeHostAt, storeHostLen(sysFlagValue), out, off)

  /** BODYLENGTH as stored (negative counts as an empty body). */
  def bodyLength: Int = buf.getInt(bodyLenAt)

  /** Index in `buffer` of the stored body. */
  def bodyPosition: Int = bodyLenAt + 4

  /** The stored (possibly compressed) body bytes. */
  def storedBody: Array[Byte] = copy(bodyPosition, math.max(bodyLength, 0))

  /** The body, decompressed when `decompress` and the record says it is compressed (§2.9). Throws
    * BodyDecompressionException (naming the compression type) for a corrupt compressed body.
    */
  def body(decompress: Boolean): Array[Byte] = {
    val stored = storedBody
    if (decompress) Compression.decompress(stored, sysFlagValue, maxBodySize) else stored
  }

  /** The cap on a decompressed body (`maxMessageSize`); the store sets it for the views it hands out. */
  var maxBodySize: Int = Layout.MaxMessageSize

  def topicPosition: Int = { tail(); topicAtValue }
  def topicLength: Int = { tail(); topicLenValue }
  def propertiesPosition: Int = { tail(); propsAtValue }
  def propertiesLength: Int = { tail(); propsLenValue }

  /** TOPIC as UTF-8 text. */
  def topic: String = {
    if (topicValue == null) { tail(); topicValue = Properties.text(buf, topicAtValue, topicLenValue) }
    topicValue
  }

  /** Every property, last duplicate wins (§2.8), built once per record. */
  def properties: java.util.Map[String, String] = {
    if (propsMap == null) propsMap = Properties.parse(propertyArray, 0, propsLenValue)
    propsMap
  }

  /** The number of properties, their byte spans in `propertyArray` found once per record (see
    * `Properties.spans`; read them from `propertySpans`). For copying UTF-8 straight into columns.
    */
  def propertyCount: Int = {
    if (spanCount < 0) {
      val room = Properties.SpanInts * (propertiesLength / 4 + 1)
      if (spans == null || spans.length < room) spans = new Array[Int](math.max(room, 64))
      spanCount = Properties.spans(propertyArray, 0, propsLenValue, spans)
    }
    spanCount
  }

  /** The spans of the `propertyCount` properties (`Properties.SpanInts` ints each), valid for this record. */
  def propertySpans: Array[Int] = { propertyCount; spans }

  /** The PROPERTIES bytes, copied once per record into an array (index 0 = the field's first byte; valid
    * until the next record): scanning an array is much faster than a buffer.
    */
  def propertyArray: Array[Byte] = {
    if (!propsCopied) {
      tail()
      if (propsBytes.length < propsLenValue) propsBytes = new Array[Byte](propsLenValue)
      buf.get(propsAtValue, propsBytes, 0, propsLenValue)
      propsCopied = true
    }
    propsBytes
  }

  /** The KEYS property exactly as stored, null when absent. */
  def key: String = wellKnownProperty(RecordView.Keys)

  /** KEYS split on single spaces, empty tokens dropped (§2.8, §5.4); null without KEYS. */
  def keys: Array[String] = RecordView.splitKeys(key)

  /** The `keys` tokens as (position in `propertyArray`, length) pairs in `out` (room for
    * `propertiesLength + 2` ints); returns the number of tokens, -1 without KEYS. For copying UTF-8
    * straight into columns.
    */
  def keyTokenSpans(out: Array[Int]): Int = {
    val from = wellKnownAt(RecordView.Keys)
    if (from < 0) return -1
    val until = from + wellKnownLength(RecordView.Keys)
    var count = 0
    var start = from
    var i = from
    while (i <= until) {
      if (i == until || propsBytes(i) == ' ') {
        if (i > start) {
          out(2 * count) = start
          out(2 * count + 1) = i - start
          count += 1
        }
        start = i + 1
      }
      i += 1
    }
    count
  }

  /** Position in `propertyArray` of the value of `RecordView.Keys`, `Tags` or `UniqKey` (-1 when absent),
    * found with the other two in one pass over the field; its length is `wellKnownLength`.
    */
  def wellKnownAt(which: Int): Int = { findWellKnown(); wellKnown(2 * which) }

  /** Length of the value at `wellKnownAt(which)`. */
  def wellKnownLength(which: Int): Int = { findWellKnown(); wellKnown(2 * which + 1) }

  /** The UNIQ_KEY property (client message id), null when absent. */
  def uniqKey: String = wellKnownProperty(RecordView.UniqKey)

  /** The TAGS property, null when absent. */
  def tags: String = wellKnownProperty(RecordView.Tags)

  // KEYS, TAGS and UNIQ_KEY are found in one pass over the field, their strings built when asked.
  private def wellKnownProperty(i: Int): String = {
    if (wellKnownText(i) == null) {
      if (propsMap != null) return propsMap.get(RecordView.WellKnown(i))
      if (wellKnownAt(i) < 0) return null
      wellKnownText(i) = new String(propsBytes, wellKnown(2 * i), wellKnown(2 * i + 1), UTF_8)
    }
    wellKnownText(i)
  }

  // From the spans when they are known (the same rules: first 0x01 ends the name, last duplicate wins),
  // else in one pass of `Properties.find`.
  private def findWellKnown(): Unit = if (!wellKnownFound) {
    if (spanCount < 0) Properties.find(propertyArray, 0, propsLenValue, RecordView.WellKnownNames, wellKnown)
    else {
      java.util.Arrays.fill(wellKnown, -1)
      var i = 0
      while (i < spanCount) {
        val at = i * Properties.SpanInts
        var w = 0
        while (w < RecordView.WellKnownNames.length) {
          val name = RecordView.WellKnownNames(w)
          if (
            spans(at + 1) == name.length &&
            java.util.Arrays.equals(propsBytes, spans(at), spans(at) + name.length, name, 0, name.length)
          ) {
            wellKnown(2 * w) = spans(at + 2)
            wellKnown(2 * w + 1) = spans(at + 3)
          }
          w += 1
        }
        i += 1
      }
    }
    wellKnownFound = true
  }

  private def storeHostAt: Int = pos + storeTimestampOffset(sysFlagValue) + 8

  private def tail(): Unit = if (!tailKnown) {
    val at = bodyPosition + math.max(bodyLength, 0)
    if (magic == MagicV2) {
      topicLenValue = buf.getShort(at)
      topicAtValue = at + 2
    } else {
      topicLenValue = buf.get(at)
      topicAtValue = at + 1
    }
    propsAtValue = topicAtValue + topicLenValue + 2
    propsLenValue = math.max(buf.getShort(propsAtValue - 2).toInt, 0)
    tailKnown = true
  }

  private def copy(at: Int, len: Int): Array[Byte] = {
    val out = new Array[Byte](len)
    buf.get(at, out)
    out
  }
}

object RecordView {

  /** The properties `wellKnownAt` finds: KEYS, TAGS, UNIQ_KEY. */
  final val Keys = 0
  final val Tags = 1
  final val UniqKey = 2
  private val WellKnown = Array(PropertyKeys, PropertyTags, PropertyUniqKey)
  private val WellKnownNames = WellKnown.map(_.getBytes(US_ASCII))

  /** KEYS split on single spaces with empty tokens dropped (§2.8, §5.4); null when absent. */
  def splitKeys(keys: String): Array[String] =
    if (keys == null) null else keys.split(' ').filter(_.nonEmpty)
}
