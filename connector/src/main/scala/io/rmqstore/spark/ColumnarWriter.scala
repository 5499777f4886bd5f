package io.rmqstore.spark

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import scala.annotation.switch
import scala.collection.mutable

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types.{ArrayType, BinaryType, MapType, StringType, StructType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.Platform

import format.{Compression, Hosts, MsgId, Properties, RecordView, Utf8}

/** Decoded records -> column vectors of the requested columns only (a query needing no column, such as
  * count(), gets batches with zero columns and `numRows` set). One writer per task, reset per batch.
  *
  * Numbers go to on-heap vectors. Text and bytes are not copied: a row of a `SpanVector` points at them
  * where they lie, in the record's buffer (valid UTF-8 as stored), a decompressed body, a host text built
  * once per distinct host (`Hosts.Texts`), the msgId written to a reused scratch arena; the writer keeps
  * the buffers a batch points into until `reset`. Bytes that are not well-formed UTF-8 go through Java's
  * decoder, which replaces them with U+FFFD as RocketMQ does.
  */
final class ColumnarWriter(schema: StructType, broker: String, decompress: Boolean) {
  import ColumnarWriter._

  private val capacity = InitialRows
  private val columns: Array[Int] = schema.fieldNames.map(column)
  private val vectors: Array[ColumnVector] = schema.fields.map(_.dataType match {
    case t @ (StringType | BinaryType) => new SpanVector(t, capacity)
    case t @ (_: ArrayType | _: MapType) => new NestedSpanVector(t, capacity)
    case t => new OnHeapColumnVector(capacity, t)
  })
  private val numbers = vectors.map { case v: OnHeapColumnVector => v; case _ => null }
  private val texts = vectors.map { case v: SpanVector => v; case _ => null }
  private val nested = vectors.map { case v: NestedSpanVector => v; case _ => null }
  private val brokerBytes = broker.getBytes(UTF_8)
  private val bornHosts = new Hosts.Texts
  private val storeHosts = new Hosts.Texts
  private var arena = new Array[Byte](ArenaBytes)
  private var arenaUsed = 0
  private val held = mutable.ArrayBuffer.empty[ByteBuffer] // native buffers the batch points into
  private var buffer: ByteBuffer = null // the current record's buffer, at Platform address (base, origin)
  private var base: AnyRef = null
  private var origin = 0L
  private var copied = false
  private var tokens = new Array[Int](64)
  private val hasBody = columns.contains(Body)
  private val hasProperties = columns.contains(PropertiesColumn)
  private var body: Array[Byte] = null // a decompressed body, or null: the stored one
  private var rows = 0
  private var reserved = capacity
  private var propsChecked = false
  private var propsValid = false

  def numRows: Int = rows

  /** Appends one row, or nothing: the body, the one column whose decoding may fail (a body that cannot
    * be decompressed, which PERMISSIVE skips), is decoded before any column is written.
    */
  def append(r: RecordView): Unit = {
    body = if (hasBody && decompress && Compression.applies(r.sysFlag, math.max(r.bodyLength, 0))) r.body(decompress)
    else null
    if (hasProperties) r.propertyCount // first: KEYS, TAGS and UNIQ_KEY are then read from the spans
    locate(r)
    if (rows == reserved) {
      reserved *= 2
      vectors.foreach {
        case v: OnHeapColumnVector => v.reserve(reserved)
        case v: SpanVector => v.reserve(reserved)
        case v: NestedSpanVector => v.reserve(reserved)
      }
    }
    propsChecked = false
    var i = 0
    while (i < vectors.length) {
      write(i, columns(i), r, rows)
      i += 1
    }
    rows += 1
  }

  /** The rows appended since the last call as a batch (valid until the next `reset`). */
  def flush(): ColumnarBatch = {
    val batch = new ColumnarBatch(vectors, rows)
    rows = 0
    batch
  }

  def reset(): Unit = {
    vectors.foreach {
      case v: OnHeapColumnVector => v.reset()
      case v: SpanVector => v.reset()
      case v: NestedSpanVector => v.reset()
    }
    held.clear()
    buffer = null
    arenaUsed = 0
  }

  def close(): Unit = {
    vectors.foreach(_.close())
    held.clear()
  }

  // `base`/`origin` of the record's buffer; a buffer that hides its array (read-only, on the heap) has the
  // record's bytes copied, for this record only.
  private def locate(r: RecordView): Unit = if (!(r.buffer eq buffer) || copied) {
    buffer = r.buffer
    SpanVector.origin(buffer) match {
      case Some((b, o)) =>
        base = b
        origin = o
        copied = false
        if (b == null) held += buffer
      case None =>
        val bytes = new Array[Byte](r.totalSize)
        buffer.get(r.position, bytes)
        base = bytes
        origin = Platform.BYTE_ARRAY_OFFSET.toLong - r.position
        copied = true
    }
  }

  // Text of the `length` bytes at index `at` of the record's buffer as row `row` of `v`, or appended to
  // an array's or map's elements `v` when `row` is `Append`; `valid`: already known to be UTF-8.
  private def utf8(v: SpanVector, row: Int, at: Int, length: Int, valid: Boolean): Unit = {
    val offset = origin + at
    if (valid || Utf8.isValid(base, offset, length)) put(v, row, base, offset, length)
    else {
      val raw = new Array[Byte](length)
      Platform.copyMemory(base, offset, raw, Platform.BYTE_ARRAY_OFFSET, length)
      val decoded = new String(raw, UTF_8).getBytes(UTF_8)
      put(v, row, decoded, Platform.BYTE_ARRAY_OFFSET, decoded.length)
    }
  }

  private def put(v: SpanVector, row: Int, base: AnyRef, offset: Long, length: Int): Unit =
    if (row == Append) v.append(base, offset, length) else v.put(row, base, offset, length)

  private def putArray(v: SpanVector, row: Int, bytes: Array[Byte]): Unit =
    v.put(row, bytes, Platform.BYTE_ARRAY_OFFSET, bytes.length)

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
  private def wellKnown(v: SpanVector, row: Int, r: RecordView, which: Int): Unit = {
    val at = r.wellKnownAt(which)
    if (at < 0) v.putNull(row)
    else utf8(v, row, r.propertiesPosition + at, r.wellKnownLength(which), propertiesValid(r))
  }

  private def keys(v: NestedSpanVector, row: Int, r: RecordView): Unit = {
    if (tokens.length < r.propertiesLength + 2) tokens = new Array[Int](r.propertiesLength + 2)
    val n = r.keyTokenSpans(tokens)
    if (n < 0) v.putNull(row)
    else {
      val start = v.elements.size
      val at = r.propertiesPosition
      val valid = propertiesValid(r)
      var i = 0
      while (i < n) {
        utf8(v.elements, Append, at + tokens(2 * i), tokens(2 * i + 1), valid)
        i += 1
      }
      v.put(row, start)
    }
  }

  private def properties(v: NestedSpanVector, row: Int, r: RecordView): Unit = {
    val n = r.propertyCount
    val spans = r.propertySpans
    val start = v.elements.size
    val at = r.propertiesPosition
    val valid = propertiesValid(r)
    var i = 0
    while (i < n) {
      val span = i * Properties.SpanInts
      utf8(v.elements, Append, at + spans(span), spans(span + 1), valid)
      utf8(v.values, Append, at + spans(span + 2), spans(span + 3), valid)
      i += 1
    }
    v.put(row, start)
  }

  private def msgId(v: SpanVector, row: Int, r: RecordView): Unit = {
    if (arenaUsed + MsgId.MaxLength > arena.length) { // the full arena stays with the rows pointing into it
      arena = new Array[Byte](ArenaBytes)
      arenaUsed = 0
    }
    val length = r.msgIdBytes(arena, arenaUsed)
    v.put(row, arena, Platform.BYTE_ARRAY_OFFSET.toLong + arenaUsed, length)
    arenaUsed += length
  }

  // Row `row` of the `i`th column, `column`: vectors are reserved per batch (`append`), so values are put.
  private def write(i: Int, column: Int, r: RecordView, row: Int): Unit = (column: @switch) match {
    case Topic => utf8(texts(i), row, r.topicPosition, math.max(r.topicLength, 0), valid = false)
    case QueueId => numbers(i).putInt(row, r.queueId)
    case QueueOffset => numbers(i).putLong(row, r.queueOffset)
    case CommitLogOffset => numbers(i).putLong(row, r.physicalOffset)
    case StoreSize => numbers(i).putInt(row, r.totalSize)
    case MsgIdColumn => msgId(texts(i), row, r)
    case UniqKey => wellKnown(texts(i), row, r, RecordView.UniqKey)
    case Key => wellKnown(texts(i), row, r, RecordView.Keys)
    case Keys => keys(nested(i), row, r)
    case Tags => wellKnown(texts(i), row, r, RecordView.Tags)
    case Body =>
      if (body != null) putArray(texts(i), row, body)
      else texts(i).put(row, base, origin + r.bodyPosition, math.max(r.bodyLength, 0))
    case BodyCrc => numbers(i).putInt(row, r.bodyCrc)
    case Flag => numbers(i).putInt(row, r.flag)
    case SysFlag => numbers(i).putInt(row, r.sysFlag)
    case BornTimestamp => numbers(i).putLong(row, r.bornTimestampMs * 1000L)
    case StoreTimestamp => numbers(i).putLong(row, r.storeTimestampMs * 1000L)
    case BornHost => putArray(texts(i), row, bornHosts.text(r.buffer, r.bornHostPosition, r.bornHostLength))
    case StoreHost => putArray(texts(i), row, storeHosts.text(r.buffer, r.storeHostPosition, r.storeHostLength))
    case ReconsumeTimes => numbers(i).putInt(row, r.reconsumeTimes)
    case PreparedTransactionOffset => numbers(i).putLong(row, r.preparedTransactionOffset)
    case PropertiesColumn => properties(nested(i), row, r)
    case Broker => putArray(texts(i), row, brokerBytes)
  }
}

object ColumnarWriter {

  /** Rows per batch; vectors grow on demand. */
  val InitialRows = 4096

  /** Bytes of a msgId arena (a new one when full). */
  private final val ArenaBytes = 64 << 10

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
