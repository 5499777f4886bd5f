package io.rmqstore.spark

import java.nio.charset.StandardCharsets.UTF_8

import scala.annotation.switch

import org.apache.spark.sql.execution.vectorized.{OnHeapColumnVector, WritableColumnVector}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}

import format.{Compression, Hosts, MsgId, Properties, RecordView, Utf8}

/** Decoded records -> on-heap column vectors of the requested columns only (a query needing no
  * column, such as count(), gets batches with zero columns and `numRows` set). One writer per task,
  * reset per batch.
  *
  * Text columns are copied as UTF-8 bytes straight from the record (through reusable scratch arrays), no
  * String built; bytes that are not well-formed UTF-8 go through Java's decoder, which replaces them with
  * U+FFFD as RocketMQ does.
  */
final class ColumnarWriter(schema: StructType, broker: String, decompress: Boolean) {
  import ColumnarWriter._

  private val capacity = InitialRows
  private val vectors: Array[WritableColumnVector] =
    schema.fields.map(f => new OnHeapColumnVector(capacity, f.dataType))
  private val columns: Array[Int] = schema.fieldNames.map(column)
  private val brokerBytes = broker.getBytes(UTF_8)
  private val scratch = new Array[Byte](MsgId.MaxLength)
  private val bornHosts = new Hosts.Memo
  private val storeHosts = new Hosts.Memo
  private var text = new Array[Byte](256)
  private var stored = new Array[Byte](64 << 10)
  private var tokens = new Array[Int](64)
  private val hasBody = columns.contains(Body)
  private val hasProperties = columns.contains(PropertiesColumn)
  private var body: Array[Byte] = null
  private var bodyLength = 0
  private var rows = 0
  private var reserved = capacity
  private var propsChecked = false
  private var propsValid = false

  def numRows: Int = rows

  /** Appends one row, or nothing: the body, the one column whose decoding may fail (a body that cannot
    * be decompressed, which PERMISSIVE skips), is decoded before any column is written.
    */
  def append(r: RecordView): Unit = {
    if (hasBody) readBody(r)
    if (hasProperties) r.propertyCount // first: KEYS, TAGS and UNIQ_KEY are then read from the spans
    if (rows == reserved) {
      reserved *= 2
      vectors.foreach(_.reserve(reserved))
    }
    propsChecked = false
    var i = 0
    while (i < vectors.length) {
      write(vectors(i), columns(i), r, rows)
      i += 1
    }
    rows += 1
  }

  /** The rows appended since the last call as a batch (valid until the next `append`). */
  def flush(): ColumnarBatch = {
    val batch = new ColumnarBatch(vectors.asInstanceOf[Array[ColumnVector]], rows)
    rows = 0
    batch
  }

  def reset(): Unit = vectors.foreach(_.reset())

  def close(): Unit = vectors.foreach(_.close())

  // The body into `body`/`bodyLength`: the stored bytes copied into a reused array, or a decompressed copy.
  private def readBody(r: RecordView): Unit = {
    val length = math.max(r.bodyLength, 0)
    if (decompress && Compression.applies(r.sysFlag, length)) {
      body = r.body(decompress)
      bodyLength = body.length
    } else {
      if (stored.length < length) stored = new Array[Byte](length)
      r.buffer.get(r.bodyPosition, stored, 0, length)
      body = stored
      bodyLength = length
    }
  }

  // Text of `bytes(at until at + length)` as row `row` of `v`, or appended to an array's element vector
  // `v` when `row` is `Append`; `valid`: already known to be UTF-8.
  private def utf8(v: WritableColumnVector, row: Int, bytes: Array[Byte], at: Int, length: Int, valid: Boolean): Unit =
    if (valid || Utf8.isValid(bytes, at, length)) put(v, row, bytes, at, length)
    else {
      val decoded = new String(bytes, at, length, UTF_8).getBytes(UTF_8)
      put(v, row, decoded, 0, decoded.length)
    }

  private def put(v: WritableColumnVector, row: Int, bytes: Array[Byte], at: Int, length: Int): Unit =
    if (row == Append) v.appendByteArray(bytes, at, length) else v.putByteArray(row, bytes, at, length)

  // Whether the whole PROPERTIES field is UTF-8, checked once per record: then so is every name, value
  // and key token (0x01, 0x02 and spaces never occur inside a multi-byte sequence).
  private def propertiesValid(r: RecordView): Boolean = {
    if (!propsChecked) {
      propsValid = Utf8.isValid(r.propertyArray, 0, r.propertiesLength)
      propsChecked = true
    }
    propsValid
  }

  // A KEYS, TAGS or UNIQ_KEY value (RecordView.wellKnownAt), null when absent.
  private def wellKnown(v: WritableColumnVector, row: Int, r: RecordView, which: Int): Unit = {
    val at = r.wellKnownAt(which)
    if (at < 0) v.putNull(row) else utf8(v, row, r.propertyArray, at, r.wellKnownLength(which), propertiesValid(r))
  }

  private def topic(v: WritableColumnVector, row: Int, r: RecordView): Unit = {
    val length = math.max(r.topicLength, 0)
    if (text.length < length) text = new Array[Byte](length)
    r.buffer.get(r.topicPosition, text, 0, length)
    utf8(v, row, text, 0, length, valid = false)
  }

  private def keys(v: WritableColumnVector, row: Int, r: RecordView): Unit = {
    if (tokens.length < r.propertiesLength + 2) tokens = new Array[Int](r.propertiesLength + 2)
    val n = r.keyTokenSpans(tokens)
    if (n < 0) v.putNull(row)
    else {
      val child = v.arrayData()
      v.putArray(row, child.getElementsAppended, n)
      val bytes = r.propertyArray
      val valid = propertiesValid(r)
      var i = 0
      while (i < n) {
        utf8(child, Append, bytes, tokens(2 * i), tokens(2 * i + 1), valid)
        i += 1
      }
    }
  }

  private def properties(v: WritableColumnVector, row: Int, r: RecordView): Unit = {
    val n = r.propertyCount
    val spans = r.propertySpans
    val names = v.getChild(0)
    val values = v.getChild(1)
    v.putArray(row, names.getElementsAppended, n) // offsets/lengths in the parent, names and values in the children
    val bytes = r.propertyArray
    val valid = propertiesValid(r)
    var i = 0
    while (i < n) {
      val at = i * Properties.SpanInts
      utf8(names, Append, bytes, spans(at), spans(at + 1), valid)
      utf8(values, Append, bytes, spans(at + 2), spans(at + 3), valid)
      i += 1
    }
  }

  // Row `row` of column `column`: vectors are reserved per batch (`append`), so values are put, not appended.
  private def write(v: WritableColumnVector, column: Int, r: RecordView, row: Int): Unit = (column: @switch) match {
    case Topic => topic(v, row, r)
    case QueueId => v.putInt(row, r.queueId)
    case QueueOffset => v.putLong(row, r.queueOffset)
    case CommitLogOffset => v.putLong(row, r.physicalOffset)
    case StoreSize => v.putInt(row, r.totalSize)
    case MsgIdColumn => v.putByteArray(row, scratch, 0, r.msgIdBytes(scratch, 0))
    case UniqKey => wellKnown(v, row, r, RecordView.UniqKey)
    case Key => wellKnown(v, row, r, RecordView.Keys)
    case Keys => keys(v, row, r)
    case Tags => wellKnown(v, row, r, RecordView.Tags)
    case Body => v.putByteArray(row, body, 0, bodyLength)
    case BodyCrc => v.putInt(row, r.bodyCrc)
    case Flag => v.putInt(row, r.flag)
    case SysFlag => v.putInt(row, r.sysFlag)
    case BornTimestamp => v.putLong(row, r.bornTimestampMs * 1000L)
    case StoreTimestamp => v.putLong(row, r.storeTimestampMs * 1000L)
    case BornHost =>
      v.putByteArray(row, bornHosts.text, 0, bornHosts.write(r.buffer, r.bornHostPosition, r.bornHostLength))
    case StoreHost =>
      v.putByteArray(row, storeHosts.text, 0, storeHosts.write(r.buffer, r.storeHostPosition, r.storeHostLength))
    case ReconsumeTimes => v.putInt(row, r.reconsumeTimes)
    case PreparedTransactionOffset => v.putLong(row, r.preparedTransactionOffset)
    case PropertiesColumn => properties(v, row, r)
    case Broker => v.putByteArray(row, brokerBytes, 0, brokerBytes.length)
  }
}

object ColumnarWriter {

  /** Rows per batch; vectors grow on demand. */
  val InitialRows = 4096

  private final val Append = -1

  // Column codes, resolved from the schema's names once per writer.
  private final val Topic = 0
  private final val QueueId = 1
  private final val QueueOffset = 2
  private final val CommitLogOffset = 3
  private final val StoreSize = 4
  private final val MsgIdColumn = 5
  private final val UniqKey = 6
  private final val Key = 7
  private final val Keys = 8
  private final val Tags = 9
  private final val Body = 10
  private final val BodyCrc = 11
  private final val Flag = 12
  private final val SysFlag = 13
  private final val BornTimestamp = 14
  private final val StoreTimestamp = 15
  private final val BornHost = 16
  private final val StoreHost = 17
  private final val ReconsumeTimes = 18
  private final val PreparedTransactionOffset = 19
  private final val PropertiesColumn = 20
  private final val Broker = 21

  private def column(name: String): Int = name match {
    case "topic" => Topic
    case "queueId" => QueueId
    case "queueOffset" => QueueOffset
    case "commitLogOffset" => CommitLogOffset
    case "storeSize" => StoreSize
    case "msgId" => MsgIdColumn
    case "uniqKey" => UniqKey
    case "key" => Key
    case "keys" => Keys
    case "tags" => Tags
    case "body" => Body
    case "bodyCrc" => BodyCrc
    case "flag" => Flag
    case "sysFlag" => SysFlag
    case "bornTimestamp" => BornTimestamp
    case "storeTimestamp" => StoreTimestamp
    case "bornHost" => BornHost
    case "storeHost" => StoreHost
    case "reconsumeTimes" => ReconsumeTimes
    case "preparedTransactionOffset" => PreparedTransactionOffset
    case "properties" => PropertiesColumn
    case RmqSchema.Broker => Broker
    case other => throw new IllegalArgumentException(s"rmqstore: no column $other") // RmqSchema.validate
  }
}
