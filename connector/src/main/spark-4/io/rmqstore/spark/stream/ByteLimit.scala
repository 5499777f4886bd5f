package io.rmqstore.spark.stream

import org.apache.spark.sql.connector.read.streaming.{ReadLimit, ReadMaxBytes}

/** `maxBytesPerTrigger` as Spark's own read limit (`ReadLimit.maxBytes`, Spark 4.0+). */
private[stream] object ByteLimit {
  def apply(maxBytes: Long): ReadLimit = ReadLimit.maxBytes(maxBytes)

  def unapply(limit: ReadLimit): Option[Long] = limit match {
    case max: ReadMaxBytes => Some(max.maxBytes)
    case _ => None
  }
}
