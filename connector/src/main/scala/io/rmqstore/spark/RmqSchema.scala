package io.rmqstore.spark

import org.apache.spark.sql.types._

import store.Names

/** The table (design §2) plus `broker`, the same columns and types as python/rmqstore/spark/schema.py.
  * A user schema may be any subset of these columns in any order; unknown columns, wrong types and
  * duplicates are errors that name the column (the Python engine's wording).
  */
object RmqSchema {
  val Broker = "broker"

  val MessageColumns: IndexedSeq[StructField] = IndexedSeq(
    StructField("topic", StringType),
    StructField("queueId", IntegerType),
    StructField("queueOffset", LongType),
    StructField("commitLogOffset", LongType),
    StructField("storeSize", IntegerType),
    StructField("msgId", StringType),
    StructField("uniqKey", StringType),
    StructField("key", StringType),
    StructField("keys", ArrayType(StringType, containsNull = true)),
    StructField("tags", StringType),
    StructField("body", BinaryType),
    StructField("bodyCrc", IntegerType),
    StructField("flag", IntegerType),
    StructField("sysFlag", IntegerType),
    StructField("bornTimestamp", TimestampType),
    StructField("storeTimestamp", TimestampType),
    StructField("bornHost", StringType),
    StructField("storeHost", StringType),
    StructField("reconsumeTimes", IntegerType),
    StructField("preparedTransactionOffset", LongType),
    StructField("properties", MapType(StringType, StringType, valueContainsNull = true))
  )

  /** Every column of the Spark table, in table order. */
  val Table: StructType = StructType(MessageColumns :+ StructField(Broker, StringType))
  val TableColumns: IndexedSeq[String] = Table.fieldNames.toIndexedSeq

  def field(name: String): StructField = Table(name)

  /** Check a user schema: known columns, table types, no duplicates; returns it unchanged. */
  def validate(schema: StructType): StructType = {
    if (schema.isEmpty) throw new IllegalArgumentException("rmqstore: the schema has no columns")
    val seen = scala.collection.mutable.Set[String]()
    for (f <- schema.fields) {
      if (!TableColumns.contains(f.name))
        throw new IllegalArgumentException(
          s"rmqstore: unknown column ${Names.repr(f.name)}; the table has: ${TableColumns.mkString(", ")}"
        )
      if (!seen.add(f.name))
        throw new IllegalArgumentException(s"rmqstore: column ${Names.repr(f.name)} is listed twice in the schema")
      val expected = Table(f.name).dataType
      if (f.dataType != expected)
        throw new IllegalArgumentException(s"rmqstore: column ${Names.repr(f.name)} has type " +
          s"${f.dataType.simpleString}, the table's type is ${expected.simpleString}")
    }
    schema
  }
}
