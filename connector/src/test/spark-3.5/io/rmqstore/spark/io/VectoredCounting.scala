package io.rmqstore.spark.io

import org.apache.hadoop.fs.FSInputStream

/** Hadoop 3.3.4 streams have no vectored reads to count: every range is a positioned read. */
private[io] trait VectoredCounting extends FSInputStream {
  protected def batch(ranges: Int): Unit
}

object VectoredCounting {

  /** The batches a `readRanges` of `ranges` disjoint ranges records: none. */
  def batches(ranges: Int): Seq[Int] = Nil
}
