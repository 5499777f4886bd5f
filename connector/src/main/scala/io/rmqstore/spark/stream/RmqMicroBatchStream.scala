package io.rmqstore.spark.stream

import java.util.Optional

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.internal.Logging
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration

import io.rmqstore.spark.{OffsetSpec, RmqInputPartition, RmqOptionException, RmqOptions, RmqScan, RmqStores}
import io.rmqstore.spark.plan.{OffsetsTask, QueueSlice => PlanSlice, RangeTask, ScanPlanner, Split}
import io.rmqstore.spark.store.{Limits, LogWalkCache, Store, Tail, UnitDamage}

/** `spark.readStream.format(...)` on the JVM engine: the same offsets, torn-record rule, read limits,
  * availableNow and data-loss handling as the Python engine's stream reader (python/rmqstore/spark/stream.py,
  * design §4.4), so a checkpoint written by one engine resumes on the other.
  *
  * Log mode (no `topics`, startingOffsets earliest / latest / a physical offset / startingTimestamp) reads
  * the commit log between record boundaries proven complete by `store.Tail`; queue mode (`topics`,
  * per-queue JSON or `group:` starts) reads the units of the named topics' consume queues in commit-log
  * order. The initial offset is fixed at the first run and kept under the checkpoint's source directory
  * (`InitialOffsetStore`), as Spark's Kafka source does. Streaming has no pushdown (design §7.3): the schema
  * prunes columns, `topics` selects queues. Driver-side state (walk caches, the availableNow target) is
  * an optimisation; readers get everything from their partitions.
  */
final class RmqMicroBatchStream(
    schema: StructType,
    options: RmqOptions,
    checkpointLocation: String,
    hadoopConf: Broadcast[SerializableConfiguration]
) extends MicroBatchStream with SupportsTriggerAvailableNow with ReportsSourceMetrics with Logging {
  import RmqMicroBatchStream._

  checkOptions(options)

  private val brokers: IndexedSeq[String] = options.brokerNames
  private val paths: Map[String, String] = brokers.zip(options.paths).toMap
  private val queueMode: Boolean = RmqMicroBatchStream.queueMode(options)
  private val walkCaches = mutable.HashMap.empty[String, LogWalkCache]
  private var target: Option[Map[String, StoreOffset]] = None
  private var lastEnd: Option[RmqSourceOffset] = None
  private var lastLag: Seq[(String, (Long, Long))] = Seq.empty

  private def withStore[T](broker: String)(f: Store => T): T = {
    val store = RmqStores.open(options, paths(broker), hadoopConf.value.value, checkCrcAtEnd = false)
    try f(store)
    finally store.close()
  }

  private def withTail[T](broker: String, store: Store)(f: Tail => T): T = {
    val tail = store.tail(walkCaches.getOrElseUpdate(broker, new LogWalkCache), options.permissive)
    try f(tail)
    finally tail.close()
  }

  // ---- offsets -------------------------------------------------------------------------------------

  override def initialOffset(): Offset =
    InitialOffsetStore.getOrCreate(checkpointLocation, hadoopConf.value.value, brokers) {
      val stores = options.paths.map(p => RmqStores.open(options, p, hadoopConf.value.value, checkCrcAtEnd = false))
      try RmqScan.checkGroupKnown(stores, options.startingOffsets, RmqOptions.StartingOffsets)
      finally stores.foreach(_.close())
      RmqSourceOffset(brokers.map(b => b -> withStore(b)(startingOffset(b, _))))
    }

  override def deserializeOffset(json: String): Offset = RmqSourceOffset.parse(json, brokers)

  private def startingOffset(broker: String, store: Store): StoreOffset = {
    val spec = options.startingOffsets
    val ts = options.startingTimestamp
    if (!queueMode) withTail(broker, store) { tail =>
      lazy val sealedEnd = tail.walk(tail.minOffset).end
      (ts, spec) match {
        case (Some(ms), _) => // no record that late: the sealed end (in a DLedger log not logEnd, §2.13)
          val found = store.seekTime(ms)
          StoreOffset.log(tail.canonical(if (found >= store.logEnd) sealedEnd else math.min(found, sealedEnd)))
        case (_, OffsetSpec.Earliest) => StoreOffset.log(tail.minOffset)
        case (_, OffsetSpec.Latest) => StoreOffset.log(sealedEnd)
        case (_, OffsetSpec.Physical(position)) =>
          if (!tail.isRecordStart(position))
            throw new RmqOptionException(
              RmqOptions.StartingOffsets,
              s"$position is not the start of a record in ${paths(broker)}"
            )
          StoreOffset.log(tail.canonical(position))
        case (_, other) => throw new IllegalStateException(s"$other starts a queue-mode stream")
      }
    }
    else {
      val tsOffset = ts.map(store.seekTime)
      StoreOffset(queues = queueBounds(store, broker).map { case (queue, bounds) =>
        queue -> queueStart(store, queue, bounds, spec, tsOffset)
      })
    }
  }

  /** Start of one queue; with startingTimestamp, the first unit at or after the log's time position. */
  private def queueStart(store: Store, queue: Queue, bounds: (Long, Long), spec: OffsetSpec, tsOffset: Option[Long])
      : Long = {
    val (low, high) = bounds
    tsOffset match {
      case Some(position) =>
        store.queueUnits(queue._1, queue._2, low, high).find(_._2 >= position).map(_._1).getOrElse(high)
      case None =>
        spec match {
          case OffsetSpec.Latest => high
          case OffsetSpec.Queues(given) =>
            given.getOrElse(queue._1, Map.empty[Int, Long]).getOrElse(queue._2, RmqOptions.EarliestQueueOffset) match {
              case RmqOptions.EarliestQueueOffset => low
              case RmqOptions.LatestQueueOffset => high
              case offset => store.queueFloor(queue._1, queue._2, offset)
            }
          case OffsetSpec.Group(group) => // inside a BatchCQ batch: getMessage returns the whole batch (§4.5)
            val committed = store.consumerOffsets.getOrElse((queue._1, group), Map.empty[Int, Long])
            store.queueFloor(queue._1, queue._2, committed.getOrElse(queue._2, low))
          case _ => low
        }
    }
  }

  private def topics(store: Store): Seq[String] = options.topics match {
    case Some(ts) => ts
    case None =>
      options.startingOffsets match {
        case OffsetSpec.Queues(given) => given.keys.toSeq.sorted(PyJson.StringOrder)
        case OffsetSpec.Group(group) =>
          store.consumerOffsets.keys.collect { case (t, g) if g == group => t }.toSeq.distinct
            .sorted(PyJson.StringOrder)
        case _ => Seq.empty
      }
  }

  /** (min, max) queue offset of each queue of the stream's topics; max within an availableNow target. */
  private def queueBounds(store: Store, broker: String, withinTarget: Boolean = true): Map[Queue, (Long, Long)] = {
    val clip = if (withinTarget) target.map(_(broker).queues) else None
    topics(store).flatMap { topic =>
      store.queueIds(topic).map { queueId =>
        val (low, max) = store.queueRange(topic, queueId)
        val high = clip.fold(max)(t => math.min(max, t.getOrElse((topic, queueId), low)))
        (topic, queueId) -> (low, math.max(high, low))
      }
    }.toMap
  }

  override def getDefaultReadLimit: ReadLimit =
    options.maxOffsetsPerTrigger.map(ReadLimit.maxRows)
      .orElse(options.maxBytesPerTrigger.map(ByteLimit(_)))
      .getOrElse(ReadLimit.allAvailable())

  /** Spark's limit for this trigger combined with the other configured option, shared among the stores. */
  private def limits(limit: ReadLimit): Limits = limit match {
    case _: ReadAllAvailable => Limits.NoLimits
    case _ =>
      val records = limit match {
        case rows: ReadMaxRows => Some(rows.maxRows)
        case _ => options.maxOffsetsPerTrigger
      }
      val bytes = limit match {
        case ByteLimit(max) => Some(max)
        case _ => options.maxBytesPerTrigger
      }
      val perStore = math.max(brokers.size, 1)
      Limits(records.map(r => math.max(r / perStore, 1L)), bytes.map(b => math.max(b / perStore, 1L)))
  }

  /** Fix the end of an availableNow run: the sealed end of every store now (read limits still apply). */
  override def prepareForTriggerAvailableNow(): Unit = {
    target = None
    target = Some(brokers.map(b => b -> withStore(b)(logEnd(b, _))).toMap)
  }

  override def latestOffset(): Offset =
    throw new UnsupportedOperationException("rmqstore: latestOffset(start, limit) is used instead")

  override def latestOffset(start: Offset, limit: ReadLimit): Offset = {
    val starts = RmqSourceOffset.from(start, brokers)
    val perTrigger = limits(limit)
    val ends = RmqSourceOffset(brokers.map(b => b -> withStore(b)(advance(b, _, starts(b), perTrigger))))
    lastEnd = Some(ends)
    ends
  }

  private def advance(broker: String, store: Store, start: StoreOffset, perTrigger: Limits): StoreOffset = {
    val location = paths(broker)
    start.position match {
      case Some(startPosition) =>
        withTail(broker, store) { tail =>
          var position = startPosition
          if (position < tail.minOffset) {
            DataLoss.report(options.failOnDataLoss, DataLoss.lostLogRange(store, location, position))
            position = tail.minOffset
          }
          val end = tail.walk(position, perTrigger, target.flatMap(_(broker).position)).end
          tail.skipped.foreach(s => logWarning(s"rmqstore: $s"))
          StoreOffset.log(math.max(end, startPosition))
        }
      case None =>
        val bounds = queueBounds(store, broker)
        val starts = bounds.map { case (queue, (low, _)) =>
          val begin = start.queues.getOrElse(queue, low)
          if (begin < low) DataLoss.report(options.failOnDataLoss, DataLoss.lostQueueRange(location, queue, begin, low))
          queue -> math.max(begin, low)
        }
        val ends = bounds.map { case (queue, (_, high)) => queue -> math.max(high, starts(queue)) }
        val advanced = QueueAdmission.admit(
          starts,
          ends,
          (q, from, until) => store.queueUnits(q._1, q._2, from, until).map(u => (u._2, u._3)).toSeq,
          perTrigger
        )
        StoreOffset(queues = start.queues ++ advanced)
    }
  }

  /** The sealed end of a store now: where a stream with no limits would stop. */
  private def logEnd(broker: String, store: Store): StoreOffset =
    if (queueMode) StoreOffset(queues = queueBounds(store, broker).map { case (q, (_, high)) => q -> high })
    else withTail(broker, store)(tail => StoreOffset.log(tail.walk(tail.minOffset).end))

  /** The end of each log now, plus how far the latest planned batch end is behind it ("lag"):
    * `{"<broker>": {"commitLogOffset": end, "lag": {"messages": m, "bytes": b}}}`, or `queueOffsets` ends
    * in queue mode; in log mode `"heldAt": p` too while the log ends in a record still being written at p
    * (docs/damage.md §2). Spark shows it as the source's latestOffset in the query progress, as for the
    * Python engine. The same lag, summed over the stores, is in the source metrics.
    */
  override def reportLatestOffset(): Offset = {
    val reports = brokers.map { broker =>
      val behind = lastEnd.map(_(broker))
      broker -> withStore(broker) { store =>
        if (queueMode) queueLag(store, broker, behind) else logLag(store, broker, behind)
      }
    }
    lastLag = reports.map { case (b, (_, m, n, _)) => b -> (m, n) }
    ReportedOffset(PyJson.render(reports.map { case (broker, (end, messages, bytes, held)) =>
      val lag = "lag" -> PyJson.ObjValue(Seq("messages" -> PyJson.Num(messages), "bytes" -> PyJson.Num(bytes)))
      broker -> PyJson.ObjValue((end.toJson :+ lag) ++ held.map(p => "heldAt" -> PyJson.Num(p)))
    }))
  }

  private def logLag(store: Store, broker: String, behind: Option[StoreOffset])
      : (StoreOffset, Long, Long, Option[Long]) =
    withTail(broker, store) { tail =>
      val walked = tail.walk(tail.minOffset)
      val end = walked.end
      val at = behind.flatMap(_.position).fold(end)(p => math.max(p, tail.minOffset))
      val bytes = math.max(end - at, 0L)
      (StoreOffset.log(end), if (bytes > 0) tail.countRecords(at, end) else 0L, bytes, walked.held)
    }

  private def queueLag(store: Store, broker: String, behind: Option[StoreOffset])
      : (StoreOffset, Long, Long, Option[Long]) = {
    val bounds = queueBounds(store, broker, withinTarget = false)
    var messages = 0L
    var bytes = 0L
    for ((queue, (low, high)) <- bounds) {
      val at = behind.fold(high)(b => math.max(b.queues.getOrElse(queue, low), low))
      if (high > at) {
        messages += high - at
        bytes += store.queueUnits(queue._1, queue._2, at, high).map(_._3.toLong).sum
      }
    }
    (StoreOffset(queues = bounds.map { case (q, (_, high)) => q -> high }), messages, bytes, None)
  }

  /** Records and record bytes between the latest planned batch end and the sealed end, over all stores. */
  override def metrics(latestConsumedOffset: Optional[Offset]): java.util.Map[String, String] =
    Map(
      "messagesBehindLatest" -> lastLag.map(_._2._1).sum.toString,
      "bytesBehindLatest" -> lastLag.map(_._2._2).sum.toString
    ).asJava

  override def commit(end: Offset): Unit = () // the store is read-only

  override def stop(): Unit = ()

  // ---- planning and reading ------------------------------------------------------------------------

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val starts = RmqSourceOffset.from(start, brokers)
    val ends = RmqSourceOffset.from(end, brokers)
    val parts = brokers.zipWithIndex.flatMap { case (broker, index) =>
      val (first, last) = (starts(broker), ends(broker))
      (first.position, last.position) match {
        case (Some(from), Some(until)) =>
          if (until <= from) Nil else withStore(broker)(logPartitions(broker, index, _, from, until))
        case _ => withStore(broker)(queuePartitions(broker, index, _, first, last))
      }
    }
    parts.zipWithIndex.map { case (p, i) => p.copy(read = p.read.copy(index = i)) }.toArray[InputPartition]
  }

  /** One or more partitions per segment touched (records never span segments, §2.1), at most
    * `maxBytesPerPartition` each; a partition owns the records starting in it.
    */
  private def logPartitions(broker: String, index: Int, store: Store, from: Long, until: Long): Seq[StreamPartition] = {
    val size = if (store.segmentSize > 0) store.segmentSize else until - from
    Split.splitSpans(Split.gridSpans(from, until, size), options.maxBytesPerPartition).map { case (a, b) =>
      StreamPartition(RmqInputPartition(0, RangeTask(index, a, b), paths(broker), broker, until, Seq.empty), a, Nil)
    }
  }

  /** The batch's queue slices grouped into partitions of about `maxBytesPerPartition` record bytes (an `%LMQ%`
    * queue's apart, `ScanPlanner.readingGroups`), each reading its units' records in commit-log order. A queue that
    * appeared after `first` starts at its earliest offset (like a new Kafka partition). A group's damaged units, and
    * the units lost past the end of a queue its window reaches, go with its first partition (docs/damage.md §3).
    */
  private def queuePartitions(broker: String, index: Int, store: Store, first: StoreOffset, last: StoreOffset)
      : Seq[StreamPartition] = {
    val queues = for {
      (queue, stop) <- last.queues.toSeq.sortBy(_._1)(StoreOffset.QueueOrder)
      begin = first.queues.getOrElse(queue, store.queueRange(queue._1, queue._2)._1) if stop > begin
    } yield {
      val damaged = mutable.ArrayBuffer.empty[UnitDamage]
      val units = store.queueSelection(queue._1, queue._2, begin, stop, None, damaged += _).toSeq
      ((queue._1, queue._2, begin, stop), units, damaged.toSeq)
    }
    val groups = ScanPlanner.readingGroups(queues.toIndexedSeq)(_._1._1).flatMap { together =>
      val bytes = together.map(_._2.map(_.size.toDouble).sum)
      Split.groupItems(bytes, atMost = Some(options.maxBytesPerPartition.toDouble)).map(_.map { i =>
        (together(i)._1, together(i)._2.map(_.phyOffset), together(i)._3)
      })
    }
    val logEnd = store.logEnd
    groups.flatMap { group =>
      val slices = group.map(_._1).toSeq
      val lost = ScanPlanner.lostAtEnds(store, slices.map { case (t, q, a, z) => PlanSlice(t, q, a, z) })
      val damaged = group.flatMap(_._3).toSeq ++ lost
      val chunks = group.flatMap(_._2).toArray.sorted.grouped(ScanPlanner.OffsetsPerTask).toSeq
      (if (chunks.isEmpty && damaged.nonEmpty) Seq(Array.empty[Long]) else chunks).zipWithIndex.map {
        case (offsets, i) =>
          StreamPartition(
            RmqInputPartition(
              0,
              OffsetsTask(index, offsets),
              paths(broker),
              broker,
              logEnd,
              Seq.empty
            ),
            -1L,
            slices,
            if (i == 0) damaged else Nil
          )
      }
    }
  }

  override def createReaderFactory(): PartitionReaderFactory = new RmqStreamReaderFactory(schema, options, hadoopConf)

  override def toString: String = s"rmqstore [${options.paths.mkString(", ")}]"
}

object RmqMicroBatchStream {
  type Queue = (String, Int)

  /** (topic, queueId, first queue offset, end queue offset) of one queue in a micro-batch. */
  type QueueSlice = (String, Int, Long, Long)

  /** Topics, per-queue or group starts read queues; everything else reads the commit log. */
  def queueMode(options: RmqOptions): Boolean = options.topics.isDefined || (options.startingOffsets match {
    case _: OffsetSpec.Queues | _: OffsetSpec.Group => true
    case _ => false
  })

  /** The options a stream rejects, with the Python engine's errors. */
  def checkOptions(options: RmqOptions): Unit = {
    for (batchOnly <- Seq(RmqOptions.EndingOffsets, RmqOptions.EndingTimestamp) if options.named(batchOnly))
      throw new RmqOptionException(
        batchOnly,
        "is for batch reads only; a stream has no end (use Trigger.AvailableNow to stop at the data present at start)"
      )
    options.startingOffsets match {
      case _: OffsetSpec.Physical if queueMode(options) =>
        throw new RmqOptionException(
          RmqOptions.StartingOffsets,
          "a physical commit-log offset cannot start a stream that reads topics by queue; give per-queue JSON " +
            "offsets instead"
        )
      case _ =>
    }
  }
}
