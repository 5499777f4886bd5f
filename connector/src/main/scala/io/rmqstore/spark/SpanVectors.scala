package io.rmqstore.spark

import java.nio.ByteBuffer

import org.apache.spark.sql.types.{ArrayType, DataType, Decimal, MapType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/** A string or binary column whose values are byte spans where they already lie: in the record's buffer
  * (a memory map or a read buffer), a decompressed body, a cached host text. Spark's column-to-row step
  * copies each value once, straight from there; nothing is copied into the vector. A span is an
  * `org.apache.spark.unsafe.Platform` address: (base object, offset), base null for native memory. The
  * buffers a batch points into must stay reachable and unchanged until the next batch (`ColumnarWriter`
  * keeps them).
  */
final class SpanVector(dataType: DataType, capacity: Int) extends NoPrimitives(dataType) {
  private var bases = new Array[AnyRef](capacity)
  private var offsets = new Array[Long](capacity)
  private var lengths = new Array[Int](capacity) // -1: null
  private var count = 0 // rows put or appended since `reset`
  private var nulls = 0

  /** Row `row` is the `length` bytes at (`base`, `offset`). */
  def put(row: Int, base: AnyRef, offset: Long, length: Int): Unit = {
    reserve(row + 1)
    bases(row) = base
    offsets(row) = offset
    lengths(row) = length
    count = math.max(count, row + 1)
  }

  def putNull(row: Int): Unit = {
    put(row, null, 0L, -1)
    nulls += 1
  }

  /** Puts the next element of an array or map column; returns its index. */
  def append(base: AnyRef, offset: Long, length: Int): Int = {
    val row = count
    put(row, base, offset, length)
    row
  }

  /** Elements appended since `reset` (the next element's index). */
  def size: Int = count

  def reserve(rows: Int): Unit = if (rows > bases.length) {
    val n = math.max(rows, 2 * bases.length)
    bases = java.util.Arrays.copyOf(bases, n)
    offsets = java.util.Arrays.copyOf(offsets, n)
    lengths = java.util.Arrays.copyOf(lengths, n)
  }

  /** Forgets every span (and the objects they hold) for the next batch. */
  def reset(): Unit = {
    java.util.Arrays.fill(bases, 0, count, null)
    count = 0
    nulls = 0
  }

  override def getUTF8String(row: Int): UTF8String =
    if (lengths(row) < 0) null else UTF8String.fromAddress(bases(row), offsets(row), lengths(row))

  override def getBinary(row: Int): Array[Byte] =
    if (lengths(row) < 0) null
    else {
      val out = new Array[Byte](lengths(row))
      Platform.copyMemory(bases(row), offsets(row), out, Platform.BYTE_ARRAY_OFFSET, out.length)
      out
    }

  override def isNullAt(row: Int): Boolean = lengths(row) < 0
  override def hasNull: Boolean = nulls > 0
  override def numNulls: Int = nulls
  override def close(): Unit = reset()
}

/** An array (`keys`) or map (`properties`) column over span elements: row `i` is elements
  * [starts(i), starts(i) + sizes(i)) of `elements` (the keys of a map) and of `values` (a map's values).
  */
final class NestedSpanVector(dataType: DataType, capacity: Int) extends NoPrimitives(dataType) {
  val elements: SpanVector = dataType match {
    case a: ArrayType => new SpanVector(a.elementType, capacity)
    case m: MapType => new SpanVector(m.keyType, capacity)
    case other => throw new IllegalArgumentException(s"rmqstore: not an array or map type: $other")
  }
  val values: SpanVector = dataType match {
    case m: MapType => new SpanVector(m.valueType, capacity)
    case _ => null
  }
  private var starts = new Array[Int](capacity)
  private var sizes = new Array[Int](capacity) // -1: null
  private var nulls = 0

  /** Row `row` is the elements appended from `start` on (`elements.size` when the row began). */
  def put(row: Int, start: Int): Unit = {
    reserve(row + 1)
    starts(row) = start
    sizes(row) = elements.size - start
  }

  def putNull(row: Int): Unit = {
    reserve(row + 1)
    sizes(row) = -1
    nulls += 1
  }

  def reserve(rows: Int): Unit = if (rows > starts.length) {
    val n = math.max(rows, 2 * starts.length)
    starts = java.util.Arrays.copyOf(starts, n)
    sizes = java.util.Arrays.copyOf(sizes, n)
  }

  def reset(): Unit = {
    elements.reset()
    if (values != null) values.reset()
    nulls = 0
  }

  override def getArray(row: Int): ColumnarArray =
    if (sizes(row) < 0) null else new ColumnarArray(elements, starts(row), sizes(row))

  override def getMap(row: Int): ColumnarMap =
    if (sizes(row) < 0) null else new ColumnarMap(elements, values, starts(row), sizes(row))

  override def getChild(ordinal: Int): ColumnVector = if (ordinal == 0) elements else values
  override def isNullAt(row: Int): Boolean = sizes(row) < 0
  override def hasNull: Boolean = nulls > 0
  override def numNulls: Int = nulls
  override def close(): Unit = reset()
}

/** The getters a span column has no values for: each throws. */
sealed abstract class NoPrimitives(dataType: DataType) extends ColumnVector(dataType) {
  override def getBoolean(row: Int): Boolean = unsupported
  override def getByte(row: Int): Byte = unsupported
  override def getShort(row: Int): Short = unsupported
  override def getInt(row: Int): Int = unsupported
  override def getLong(row: Int): Long = unsupported
  override def getFloat(row: Int): Float = unsupported
  override def getDouble(row: Int): Double = unsupported
  override def getDecimal(row: Int, precision: Int, scale: Int): Decimal = unsupported
  override def getUTF8String(row: Int): UTF8String = unsupported
  override def getBinary(row: Int): Array[Byte] = unsupported
  override def getArray(row: Int): ColumnarArray = unsupported
  override def getMap(row: Int): ColumnarMap = unsupported
  override def getChild(ordinal: Int): ColumnVector = unsupported

  private def unsupported: Nothing =
    throw new UnsupportedOperationException(s"rmqstore: no such value in a $dataType column")
}

object SpanVector {

  /** `Platform` address of a buffer's index 0: (its array, the array's offset) or (null, its native address);
    * None for a read-only heap buffer, whose array is hidden.
    */
  def origin(buf: ByteBuffer): Option[(AnyRef, Long)] =
    if (buf.hasArray) Some((buf.array, Platform.BYTE_ARRAY_OFFSET.toLong + buf.arrayOffset))
    else if (buf.isDirect) Some((null, Platform.getLong(buf, AddressField)))
    else None

  // java.nio.Buffer.address (a direct buffer's native address), read as Spark's Platform reads its fields.
  private val AddressField: Long = {
    val unsafeClass = Class.forName("sun.misc.Unsafe")
    val theUnsafe = unsafeClass.getDeclaredField("theUnsafe")
    theUnsafe.setAccessible(true)
    val field = classOf[java.nio.Buffer].getDeclaredField("address")
    unsafeClass.getMethod("objectFieldOffset", classOf[java.lang.reflect.Field]).invoke(theUnsafe.get(null), field)
      .asInstanceOf[Long]
  }
}
