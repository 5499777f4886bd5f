package io.rmqstore.spark.stream

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.util.SerializableConfiguration

import io.rmqstore.spark.{RmqColumnarReader, RmqInputPartition, RmqOptions, RmqStores}
import io.rmqstore.spark.store.{StoreCorruptionException, UnitDamage}
import io.rmqstore.spark.stream.RmqMicroBatchStream.QueueSlice

/** One task of a micro-batch: a batch read task (`read`: a commit-log range, or the records of queue
  * units by physical offset) plus what the data-loss check needs: the range start (log mode, else -1) or
  * the queue slices; and the damaged units the driver met in them (docs/damage.md §3).
  */
final case class StreamPartition(
    read: RmqInputPartition,
    logStart: Long,
    slices: Seq[QueueSlice],
    damaged: Seq[UnitDamage] = Nil
) extends InputPartition

/** The batch engine's columnar reader, after checking that retention has not deleted what the task
  * reads (python/rmqstore/spark/stream.py `_still_stored`): failOnDataLoss=true fails
  * the task, false warns; the read then covers only what is still stored.
  */
final class RmqStreamReaderFactory(
    schema: StructType,
    options: RmqOptions,
    hadoopConf: Broadcast[SerializableConfiguration]
) extends PartitionReaderFactory {
  override def supportColumnarReads(partition: InputPartition): Boolean = true

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    throw new UnsupportedOperationException("rmqstore: the JVM engine reads columnar batches only")

  override def createColumnarReader(partition: InputPartition): PartitionReader[ColumnarBatch] = {
    val part = partition.asInstanceOf[StreamPartition]
    val conf = hadoopConf.value.value
    val store = RmqStores.open(options, part.read.path, conf, knownEnd = Some(part.read.logEnd))
    try {
      if (part.logStart >= 0 && part.logStart < store.minOffset)
        DataLoss.report(options.failOnDataLoss, DataLoss.lostLogRange(store, part.read.path, part.logStart))
      for ((topic, queueId, begin, _) <- part.slices) {
        val low = store.queueRange(topic, queueId)._1
        if (begin < low)
          DataLoss.report(options.failOnDataLoss, DataLoss.lostQueueRange(part.read.path, (topic, queueId), begin, low))
      }
    } finally store.close()
    if (!options.permissive)
      part.damaged.headOption.foreach(d => throw new StoreCorruptionException(d.file, d.position, d.cause))
    new RmqColumnarReader(part.read, schema, options, conf, part.damaged)
  }
}
