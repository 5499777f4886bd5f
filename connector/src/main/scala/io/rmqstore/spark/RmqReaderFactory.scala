package io.rmqstore.spark

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.util.SerializableConfiguration

import format.RecordView
import plan.{Confirm, KeyProbeTask, OffsetsTask, ProbeBucket, QueueSliceTask, RangeTask, RangesTask}
import store.{Ranges, ScanStats, StoreCorruptionException, UnitDamage}

/** Columnar readers: each task's records are decoded in chunks, confirmed against every consumed
  * predicate (decoding their columns internally when Spark pruned them) and written to column vectors
  * of the requested columns only. `hadoopConf`: the read's Hadoop configuration, None when every store
  * is local (none needed).
  */
class RmqReaderFactory(
    schema: StructType,
    options: RmqOptions,
    hadoopConf: Option[Broadcast[SerializableConfiguration]],
    limit: Option[Int] = None
) extends PartitionReaderFactory {
  override def supportColumnarReads(partition: InputPartition): Boolean = true

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    throw new UnsupportedOperationException("rmqstore: the JVM engine reads columnar batches only")

  override def createColumnarReader(partition: InputPartition): PartitionReader[ColumnarBatch] =
    new RmqColumnarReader(
      partition.asInstanceOf[RmqInputPartition],
      schema,
      options,
      hadoopConf.map(_.value.value).orNull,
      limit = limit
    )
}

/** Reads one task chunk by chunk, a scan only until it has `limit` rows (a pushed LIMIT): commit-log ranges in `ScanChunkBytes` pieces (a piece owns the records
  * starting in it), offsets in `OffsetsChunk` pieces (from the task, the index probe it makes or the
  * consume-queue units it names). An offset the query named that is not a record start gives no row; one
  * the store named is damage (docs/damage.md §3, §4: FAILFAST fails, PERMISSIVE skips and counts).
  */
final class RmqColumnarReader(
    partition: RmqInputPartition,
    schema: StructType,
    options: RmqOptions,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    damaged: Seq[UnitDamage] = Nil,
    limit: Option[Int] = None
) extends PartitionReader[ColumnarBatch] {
  import RmqColumnarReader._

  private val store = RmqStores.open(options, partition.path, hadoopConf, knownEnd = Some(partition.logEnd))
  private val writer = new ColumnarWriter(schema, partition.broker, options.decompress)
  private val predicates = partition.predicates
  private var decoded = 0L
  private var rejected = 0L
  private val stats = ScanStats()
  damaged.foreach(d => stats.skip(d.file, d.position, 0, d.cause)) // a stream's, skipped PERMISSIVE (damage.md §3)
  private var rows = 0L
  private var current: ColumnarBatch = _

  private val keep: RecordView => Unit = { r =>
    decoded += 1
    if (Confirm.matches(r, predicates)) writer.append(r) else rejected += 1
  }

  /** The task as a sequence of chunks, each read into the writer when pulled. */
  private lazy val chunks: Iterator[Unit] = partition.task match {
    case RangeTask(_, start, end) => scanChunks(IndexedSeq((start, end)))
    case RangesTask(_, ranges) => scanChunks(ranges)
    case OffsetsTask(_, offsets, userPoints) => readChunks(offsets, keep, strict = !userPoints)
    case t: KeyProbeTask =>
      val found = store.indexLookup(t.topics, t.values, t.lacking)
      stats.add(store.lookupStats)
      readChunks(found.filter(o => o >= t.lo && o < t.hi), keepOwned(t), strict = true)
    case t: QueueSliceTask =>
      val damage: UnitDamage => Unit = d =>
        if (t.coverage) () // the plan's coverage scan reads the unit's record (docs/damage.md §3)
        else if (options.permissive) stats.skip(d.file, d.position, 0, d.cause)
        else throw new StoreCorruptionException(d.file, d.position, d.cause)
      val phys = t.slices.iterator.flatMap(s => store.queueOffsets(s.topic, s.queueId, s.start, s.end, t.tags, damage))
      val offsets = phys.toArray.distinct.sorted
      t.lost.foreach(damage) // units lost past a queue's end (docs/damage.md §3)
      readChunks(Ranges.keep(offsets, t.lo, t.hi, t.exclude), keep, strict = true)
  }

  /** Commit-log ranges in `ScanChunkBytes` pieces; a record straddling a piece's end belongs to it. */
  private def scanChunks(ranges: IndexedSeq[(Long, Long)]): Iterator[Unit] = ranges.iterator.flatMap {
    case (start, end) =>
      val stop = math.min(end, partition.logEnd)
      var cursor = start
      Iterator.continually(()).takeWhile(_ => cursor < stop).map { _ =>
        val to = math.min(stop, cursor + ScanChunkBytes)
        var last = -1L
        stats.add(store.scanWhile(cursor, to, options.verifyCrc, options.permissive) { r =>
          last = r.physicalOffset + r.totalSize
          keep(r)
          limit.forall(rows + writer.numRows < _)
        })
        cursor = math.max(to, last)
      }
  }

  /** Offsets in `OffsetsChunk` pieces; an offset that is not a record start gives no row unless `strict`
    * (then it is damage, `Store.readAt`).
    */
  private def readChunks(offsets: Array[Long], f: RecordView => Unit, strict: Boolean): Iterator[Unit] =
    offsets.grouped(OffsetsChunk).map { chunk =>
      stats.add(store.readAt(chunk, options.verifyCrc, options.permissive, strict)(f))
    }

  /** Confirmed records that this probe task owns (see `KeyProbeTask`): the bucket of the smallest of the
    * record's tokens among all the read's probe values.
    */
  private def keepOwned(t: KeyProbeTask): RecordView => Unit = { r =>
    decoded += 1
    if (Confirm.matches(r, predicates)) {
      val tokens = if (t.kind == "uniqKey") Option(r.uniqKey).toSeq else Option(r.keys).toSeq.flatten
      val matching = tokens.filter(t.allValues.contains)
      if (matching.nonEmpty && ProbeBucket(matching.min, t.buckets) == t.bucket) writer.append(r)
    } else rejected += 1
  }

  /** No further chunk once `limit` rows came back (a pushed LIMIT, which Spark applies again). */
  override def next(): Boolean = {
    if (limit.exists(rows >= _)) return false
    writer.reset()
    while (writer.numRows == 0 && chunks.hasNext) chunks.next()
    current = writer.flush()
    rows += current.numRows()
    current.numRows() > 0
  }

  override def get(): ColumnarBatch = current

  override def currentMetricsValues(): Array[CustomTaskMetric] = Array(
    RmqMetrics.task(RmqMetrics.RecordsDecoded, decoded),
    RmqMetrics.task(RmqMetrics.BytesRead, stats.bytesRead),
    RmqMetrics.task(RmqMetrics.IndexProbes, store.indexProbes),
    RmqMetrics.task(RmqMetrics.CandidatesRejected, rejected),
    RmqMetrics.task(RmqMetrics.RecordsSkipped, stats.skippedRecords),
    RmqMetrics.task(RmqMetrics.CrcFailures, stats.crcFailures)
  )

  override def close(): Unit = {
    try {
      StatsLog.write(
        options.statsDir,
        Map(
          "event" -> "read",
          "engine" -> "jvm",
          "partition" -> partition.index,
          "task" -> partition.task.getClass.getSimpleName,
          "store" -> partition.task.storeIndex,
          "rows" -> rows,
          "records_decoded" -> decoded,
          "bytes_read" -> stats.bytesRead,
          "index_probes" -> store.indexProbes,
          "candidates_rejected" -> rejected,
          "invalid_records_skipped" -> stats.skippedRecords,
          "bytes_skipped" -> stats.skippedBytes
        )
      )
      // once per task, on the executor's stderr (its log), like the Python engine
      stats.skipSummary.foreach(line => System.err.println(s"$line (task ${partition.index})"))
    } finally {
      writer.close()
      store.close()
    }
  }
}

object RmqColumnarReader {

  /** Commit-log bytes per scan chunk (one batch at most). */
  val ScanChunkBytes: Long = 4L << 20

  /** Offsets per point-read chunk. */
  val OffsetsChunk = 4096
}
