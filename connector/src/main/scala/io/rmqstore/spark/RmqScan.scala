package io.rmqstore.spark

import java.util.OptionalLong

import org.apache.hadoop.conf.Configuration
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.internal.connector.SupportsMetadata
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration

import io.StoreFileSystem
import store.{Store, UnknownNameException}
import stream.RmqMicroBatchStream
import plan._

/** One planned batch read: the plan is made once per scan (stores opened on the driver, closed after
  * planning); explain("formatted") shows PushedFilters through `SupportsMetadata`, like the Python
  * engine's scan node.
  */
class RmqScan(
    readSchema: StructType,
    options: RmqOptions,
    consumed: IndexedSeq[Predicate],
    pushed: Array[V2Predicate],
    limit: Option[Int] = None
) extends Scan with Batch with SupportsReportStatistics with SupportsMetadata with Logging {
  override def readSchema(): StructType = readSchema

  override def toBatch: Batch = {
    RmqScan.checkBatchOffsets(options)
    this
  }

  /** A stream of the stores (no pushdown in streams: `consumed` is empty, the schema prunes columns); its
    * triggers share one broadcast of the Hadoop configuration.
    */
  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    val conf = SparkSession.active.sparkContext.broadcast(new SerializableConfiguration(hadoopConf))
    new RmqMicroBatchStream(readSchema, options, checkpointLocation, conf)
  }

  override def description(): String =
    s"rmqstore [${options.paths.mkString(", ")}] PushedFilters: ${RmqScan.pushedText(pushed)}" +
      limit.fold("")(n => s" PushedLimit: $n") + keysProbe.fold("")(k => s" KeysProbe: $k")

  override def getMetaData(): Map[String, String] = Map(
    "Format" -> "rmqstore",
    "PushedFilters" -> RmqScan.pushedText(pushed),
    "ReadSchema" -> readSchema.catalogString
  ) ++ limit.map(n => "PushedLimit" -> n.toString) ++ keysProbe.map("KeysProbe" -> _)

  /** The `keys` option's index probe (KEYS tokens), shown by explain() beside the pushed filters. */
  private def keysProbe: Option[String] = options.keys.map(_.mkString("[", ", ", "]"))

  /** The Hadoop configuration of the read (the session's plus the S3A settings of the options). */
  private lazy val hadoopConf: Configuration =
    SparkSession.active.sessionState.newHadoopConfWithOptions(RmqStores.hadoopSettings(options))

  /** The configuration shipped to executors, only when a store is given by URI: local stores need none,
    * and a broadcast costs a key lookup tens of milliseconds.
    */
  private lazy val executorConf: Option[Broadcast[SerializableConfiguration]] =
    if (options.paths.exists(StoreFileSystem.isUri))
      Some(SparkSession.active.sparkContext.broadcast(new SerializableConfiguration(hadoopConf)))
    else None

  /** Index probes made while planning (`Store.indexProbes`), 0 until planned: never planned for a stream. */
  @volatile private var plannedProbes = 0L

  /** Bytes and records that planning read besides what the tasks read (`Store.lookupStats`: side index builds). */
  @volatile private var plannedReads = (0L, 0L)

  private lazy val planned: (ReadPlan, IndexedSeq[(Long, Seq[Predicate])]) = {
    RmqScan.checkBatchOffsets(options)
    val stores = options.paths.map(p => RmqStores.open(options, p, hadoopConf))
    try {
      RmqScan.checkGroupKnown(stores, options.startingOffsets, RmqOptions.StartingOffsets)
      RmqScan.checkGroupKnown(stores, options.endingOffsets, RmqOptions.EndingOffsets)
      val perStore = stores.map(s => (s.logEnd, consumed ++ OptionPredicates.forStore(options, s)))
      val plan = ScanPlanner.plan(
        stores,
        perStore.map(_._2),
        ScanPlanner.Settings(options.maxBytesPerPartition, options.minPartitions, options.keyProbePartitionThreshold)
      )
      plannedProbes = stores.map(_.indexProbes).sum
      plannedReads = (stores.map(_.lookupStats.bytesRead).sum, stores.map(_.lookupStats.records).sum)
      report(plan, plannedProbes)
      (plan, perStore)
    } finally stores.foreach(_.close())
  }

  /** One log line and one statsDir "plan" line per planned scan. */
  private def report(plan: ReadPlan, indexProbes: Long): Unit = {
    val rangeBytes = plan.tasks.collect {
      case RangeTask(_, s, e) => e - s
      case RangesTask(_, ranges) => ranges.map { case (s, e) => e - s }.sum
    }.sum
    logInfo(s"rmqstore plan: access=${plan.access.mkString(",")} tasks=${plan.tasks.size} pushed filters: " +
      consumed.map(Predicate.describe).mkString("; "))
    plan.notes.foreach(note => logInfo(s"rmqstore plan: $note"))
    StatsLog.write(
      options.statsDir,
      Map(
        "event" -> "plan",
        "engine" -> "jvm",
        "access" -> plan.access,
        "tasks" -> plan.tasks.size,
        "range_bytes" -> rangeBytes,
        "index_probes" -> indexProbes,
        "notes" -> plan.notes,
        "pushed" -> consumed.map(Predicate.describe)
      )
    )
  }

  override def planInputPartitions(): Array[InputPartition] = {
    val (plan, perStore) = planned
    plan.tasks.zipWithIndex.map { case (task, i) =>
      RmqInputPartition(
        i,
        task,
        options.paths(task.storeIndex),
        options.brokerNames(task.storeIndex),
        perStore(task.storeIndex)._1,
        perStore(task.storeIndex)._2
      )
    }.toArray
  }

  override def createReaderFactory(): PartitionReaderFactory =
    new RmqReaderFactory(readSchema, options, executorConf, limit)

  /** Bytes the plan reads: index lookups and point reads are small, so joins can broadcast them. */
  override def estimateStatistics(): Statistics = {
    val (plan, _) = planned
    val bytes = plan.tasks.map {
      case RangeTask(_, s, e) => e - s
      case RangesTask(_, ranges) => ranges.map { case (s, e) => e - s }.sum
      case OffsetsTask(_, offsets, _) => offsets.length.toLong * RmqScan.PointReadBytes
      case t: KeyProbeTask => t.values.size.toLong * RmqScan.PointReadBytes
      case t: QueueSliceTask => t.slices.map(s => s.end - s.start).sum * RmqScan.PointReadBytes
    }.sum
    new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.of(bytes)
      override def numRows(): OptionalLong = OptionalLong.empty()
    }
  }

  override def supportedCustomMetrics(): Array[CustomMetric] = RmqMetrics.supported

  /** The index probes made while planning (a key lookup probes on the driver); the tasks report theirs. */
  override def reportDriverMetrics(): Array[CustomTaskMetric] =
    Array(
      RmqMetrics.task(RmqMetrics.IndexProbes, plannedProbes),
      RmqMetrics.task(RmqMetrics.BytesRead, plannedReads._1),
      RmqMetrics.task(RmqMetrics.RecordsDecoded, plannedReads._2)
    )
}

object RmqScan {

  /** The pushed filters as explain() shows them (V1 form where there is one). */
  def pushedText(pushed: Array[V2Predicate]): String =
    pushed.map(p => PredicateTranslator.toV1(p).fold(p.toString)(_.toString)).mkString("[", ", ", "]")

  /** Size assumed per point read for statistics (a typical small message). */
  val PointReadBytes = 1024L

  /** For `group:<name>`: RmqOptionException naming the option and the group (close and known groups)
    * when no store has offsets committed by it; a typo must not read as an empty result
    * (python/rmqstore/spark/offsets.py `check_group_known`).
    */
  def checkGroupKnown(stores: Seq[Store], spec: OffsetSpec, option: String): Unit = spec match {
    case OffsetSpec.Group(group) =>
      val unknown = Seq.newBuilder[String]
      val known = stores.exists { s =>
        try { s.groupOffsets(group); true }
        catch { case e: UnknownNameException => unknown += e.getMessage; false }
      }
      if (!known) throw new RmqOptionException(option, unknown.result().mkString("; "))
    case _ =>
  }

  def checkBatchOffsets(options: RmqOptions): Unit = {
    if (options.startingOffsets == OffsetSpec.Latest)
      throw new RmqOptionException(
        RmqOptions.StartingOffsets,
        "'latest' is not allowed for batch queries (it reads nothing)"
      )
    if (options.endingOffsets == OffsetSpec.Earliest)
      throw new RmqOptionException(
        RmqOptions.EndingOffsets,
        "'earliest' is not allowed for batch queries (it reads nothing)"
      )
  }
}
