package io.rmqstore.spark.io

import java.nio.ByteBuffer
import java.util.function.IntFunction

import org.apache.hadoop.fs.{FSInputStream, FileRange, VectoredReadUtils}

/** A counted stream's vectored reads (Hadoop 3.3.5+): each one batch, its ranges read by `read(position, ...)`. */
private[io] trait VectoredCounting extends FSInputStream {
  protected def batch(ranges: Int): Unit

  override def readVectored(ranges: java.util.List[_ <: FileRange], allocate: IntFunction[ByteBuffer]): Unit = {
    batch(ranges.size)
    VectoredReadUtils.readVectored(this, ranges, allocate)
  }
}

object VectoredCounting {

  /** The batches a `readRanges` of `ranges` disjoint ranges records: one vectored read. */
  def batches(ranges: Int): Seq[Int] = Seq(ranges)
}
