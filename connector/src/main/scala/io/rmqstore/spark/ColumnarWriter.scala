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
  private val scratch = new Array[Byte](math.max(MsgId.MaxLength, Hosts.MaxTextLength))
  private var text = new Array[Byte](256)
  private var stored = new Array[Byte](64 << 10)
  private var tokens = new Array[Int](64)
  private lazy val spans = new Array[Int](Properties.SpanInts * Properties.MaxProperties)
  private val hasBody = columns.contains(Body)
  private var body: Array[Byte] = null
  private var bodyLength = 0
  private var rows = 0

  def numRows: Int = rows

  /** Appends one row, or nothing: the body, the one column whose decoding may fail (a body that cannot
    * be decompressed, which PERMISSIVE skips), is decoded before any column is written.
    */
  def append(r: RecordView): Unit = {
    if (hasBody) readBody(r)
    var i = 0
    while (i < vectors.length) {
      write(vectors(i), columns(i), r)
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

  private def utf8(v: WritableColumnVector, bytes: Array[Byte], at: Int, length: Int): Unit =
    if (Utf8.isValid(bytes, at, length)) v.appendByteArray(bytes, at, length)
    else {
      val decoded = new String(bytes, at, length, UTF_8).getBytes(UTF_8)
      v.appendByteArray(decoded, 0, decoded.length)
    }

  // A KEYS, TAGS or UNIQ_KEY value (RecordView.wellKnownAt), null when absent.
  private def wellKnown(v: WritableColumnVector, r: RecordView, which: Int): Unit = {
    val at = r.wellKnownAt(which)
    if (at < 0) v.appendNull() else utf8(v, r.propertyArray, at, r.wellKnownLength(which))
  }

  private def topic(v: WritableColumnVector, r: RecordView): Unit = {
    val length = math.max(r.topicLength, 0)
    if (text.length < length) text = new Array[Byte](length)
    r.buffer.get(r.topicPosition, text, 0, length)
    utf8(v, text, 0, length)
  }

  private def keys(v: WritableColumnVector, r: RecordView): Unit = {
    if (tokens.length < r.propertiesLength + 2) tokens = new Array[Int](r.propertiesLength + 2)
    val n = r.keyTokenSpans(tokens)
    if (n < 0) v.appendNull()
    else {
      v.appendArray(n) // records the child's current length as this row's offset
      val bytes = r.propertyArray
      val child = v.arrayData()
      var i = 0
      while (i < n) {
        utf8(child, bytes, tokens(2 * i), tokens(2 * i + 1))
        i += 1
      }
    }
  }

  private def properties(v: WritableColumnVector, r: RecordView): Unit = {
    val n = r.propertySpans(spans)
    v.appendArray(n) // offsets/lengths in the parent, keys in child 0, values in child 1
    val bytes = r.propertyArray
    val names = v.getChild(0)
    val values = v.getChild(1)
    var i = 0
    while (i < n) {
      val at = i * Properties.SpanInts
      utf8(names, bytes, spans(at), spans(at + 1))
      utf8(values, bytes, spans(at + 2), spans(at + 3))
      i += 1
    }
  }

  private def write(v: WritableColumnVector, column: Int, r: RecordView): Unit = (column: @switch) match {
    case Topic => topic(v, r)
    case QueueId => v.appendInt(r.queueId)
    case QueueOffset => v.appendLong(r.queueOffset)
    case CommitLogOffset => v.appendLong(r.physicalOffset)
    case StoreSize => v.appendInt(r.totalSize)
    case MsgIdColumn => v.appendByteArray(scratch, 0, r.msgIdBytes(scratch, 0))
    case UniqKey => wellKnown(v, r, RecordView.UniqKey)
    case Key => wellKnown(v, r, RecordView.Keys)
    case Keys => keys(v, r)
    case Tags => wellKnown(v, r, RecordView.Tags)
    case Body => v.appendByteArray(body, 0, bodyLength)
    case BodyCrc => v.appendInt(r.bodyCrc)
    case Flag => v.appendInt(r.flag)
    case SysFlag => v.appendInt(r.sysFlag)
    case BornTimestamp => v.appendLong(r.bornTimestampMs * 1000L)
    case StoreTimestamp => v.appendLong(r.storeTimestampMs * 1000L)
    case BornHost => v.appendByteArray(scratch, 0, r.bornHostBytes(scratch, 0))
    case StoreHost => v.appendByteArray(scratch, 0, r.storeHostBytes(scratch, 0))
    case ReconsumeTimes => v.appendInt(r.reconsumeTimes)
    case PreparedTransactionOffset => v.appendLong(r.preparedTransactionOffset)
    case PropertiesColumn => properties(v, r)
    case Broker => v.appendByteArray(brokerBytes, 0, brokerBytes.length)
  }
}

object ColumnarWriter {

  /** Rows per batch; vectors grow on demand. */
  val InitialRows = 4096

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
