package io.rmqstore.spark.stream

import org.apache.spark.sql.connector.read.streaming.ReadLimit

/** `maxBytesPerTrigger` as the stream's own read limit: Spark 3.5 has no byte limit (`ReadMaxBytes` is 4.0+) and
  * hands the default limit back to `latestOffset` as it is.
  */
private[stream] final case class ByteLimit(maxBytes: Long) extends ReadLimit
