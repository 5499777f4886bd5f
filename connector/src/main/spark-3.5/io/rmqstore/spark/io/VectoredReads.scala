package io.rmqstore.spark.io

import java.nio.ByteBuffer

import org.apache.hadoop.fs.FSDataInputStream

/** Hadoop 3.3.4 (the Hadoop of Spark 3.5) has no vectored reads (`readVectored` is 3.3.5+): ranges are read with
  * one positioned read each.
  */
private[io] object VectoredReads {

  /** None: the caller reads each range with a positioned read. */
  def read(path: String, in: FSDataInputStream, ranges: Seq[(Long, Int)]): Option[Seq[ByteBuffer]] = None
}
