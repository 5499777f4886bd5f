package io.rmqstore.spark

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.spark.sql.execution.vectorized.{OnHeapColumnVector, WritableColumnVector}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}

import format.{Hosts, MsgId, RecordView}

/** Decoded records -> on-heap column vectors of the requested columns only (a query needing no
  * column, such as count(), gets batches with zero columns and `numRows` set). One writer per task,
  * reset per batch.
  */
final class ColumnarWriter(schema: StructType, broker: String, decompress: Boolean) {
  private val capacity = ColumnarWriter.InitialRows
  private val vectors: Array[WritableColumnVector] =
    schema.fields.map(f => new OnHeapColumnVector(capacity, f.dataType))
  private val names: Array[String] = schema.fieldNames
  private val brokerBytes = broker.getBytes(UTF_8)
  private val scratch = new Array[Byte](math.max(MsgId.MaxLength, Hosts.MaxTextLength))
  private val hasBody = names.contains("body")
  private var rows = 0

  def numRows: Int = rows

  /** Appends one row, or nothing: the body, the one column whose decoding may fail (a body that cannot
    * be decompressed, which PERMISSIVE skips), is decoded before any column is written.
    */
  def append(r: RecordView): Unit = {
    val body = if (hasBody) r.body(decompress) else null
    var i = 0
    while (i < vectors.length) {
      write(vectors(i), names(i), r, body)
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

  private def string(v: WritableColumnVector, s: String): Unit =
    if (s == null) v.appendNull() else { val b = s.getBytes(UTF_8); v.appendByteArray(b, 0, b.length) }

  private def write(v: WritableColumnVector, name: String, r: RecordView, body: Array[Byte]): Unit = name match {
    case "topic" => string(v, r.topic)
    case "queueId" => v.appendInt(r.queueId)
    case "queueOffset" => v.appendLong(r.queueOffset)
    case "commitLogOffset" => v.appendLong(r.physicalOffset)
    case "storeSize" => v.appendInt(r.totalSize)
    case "msgId" => v.appendByteArray(scratch, 0, r.msgIdBytes(scratch, 0))
    case "uniqKey" => string(v, r.uniqKey)
    case "key" => string(v, r.key)
    case "keys" =>
      val keys = r.keys
      if (keys == null) v.appendNull()
      else {
        v.appendArray(keys.length) // records the child's current length as this row's offset
        keys.foreach(k => string(v.arrayData(), k))
      }
    case "tags" => string(v, r.tags)
    case "body" => v.appendByteArray(body, 0, body.length)
    case "bodyCrc" => v.appendInt(r.bodyCrc)
    case "flag" => v.appendInt(r.flag)
    case "sysFlag" => v.appendInt(r.sysFlag)
    case "bornTimestamp" => v.appendLong(r.bornTimestampMs * 1000L)
    case "storeTimestamp" => v.appendLong(r.storeTimestampMs * 1000L)
    case "bornHost" => v.appendByteArray(scratch, 0, r.bornHostBytes(scratch, 0))
    case "storeHost" => v.appendByteArray(scratch, 0, r.storeHostBytes(scratch, 0))
    case "reconsumeTimes" => v.appendInt(r.reconsumeTimes)
    case "preparedTransactionOffset" => v.appendLong(r.preparedTransactionOffset)
    case "properties" =>
      val props = r.properties
      v.appendArray(props.size) // offsets/lengths in the parent, keys in child 0, values in child 1
      props.forEach { (k, value) => string(v.getChild(0), k); string(v.getChild(1), value) }
    case RmqSchema.Broker => v.appendByteArray(brokerBytes, 0, brokerBytes.length)
    case other => throw new IllegalArgumentException(s"rmqstore: no column $other") // RmqSchema.validate
  }
}

object ColumnarWriter {

  /** Rows per batch; vectors grow on demand. */
  val InitialRows = 4096
}
