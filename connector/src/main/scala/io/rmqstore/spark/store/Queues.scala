package io.rmqstore.spark.store

import scala.collection.mutable

import io.rmqstore.spark.format.{BrokerConfig, ConsumeQueueUnit, JavaHash, Layout}
import io.rmqstore.spark.io.StoreFileSystem

/** The store's consume queues (§4): topics, queue ids, units and bounds, behind one interface for the three
  * queue kinds (files, BatchCQ §4.5, RocksDB §4.7); the Python engine's Queues (store/queues.py). A service of
  * the store facade (docs/design.md §1); `log` bounds the units (valid end, §2.12), `config` names topics.
  */
private[spark] final class Queues(fs: StoreFileSystem, root: String, log: CommitLog, config: StoreConfig)
    extends AutoCloseable {
  import Queues._

  private val queues = mutable.HashMap.empty[(String, Int), QueueReader]
  private val found = mutable.ArrayBuffer.empty[String]

  /** Problems found so far: queue files' layout, topic names that cannot be a directory. */
  def problems: Seq[String] = found.toSeq

  private def consumequeueDir: String = fs.join(root, ConsumequeueDir)

  /** Topics with a directory under `batchconsumequeue/` (§4.5): their queues are read there. */
  private lazy val batchTopics: Set[String] =
    fs.list(fs.join(root, BatchConsumequeueDir)).filter(_.isDir).map(_.name).toSet

  /** The directory holding `topic`'s queues: `batchconsumequeue/` for a BatchCQ topic (§4.5). */
  private def queuesDir(topic: String): String =
    fs.join(root, if (batchTopics(topic)) BatchConsumequeueDir else ConsumequeueDir, Segments.checkTopicDirName(topic))

  /** Topics with a consume-queue directory or an entry in topics.json, sorted; names that cannot be a
    * directory inside the store are left out and reported in `problems`.
    */
  def topics: Seq[String] = {
    val queueTopics = rocksQueues.fold(fs.list(consumequeueDir).filter(_.isDir).map(_.name).toSet)(_.topics)
    val names = batchTopics ++ queueTopics ++
      config.topicsDocument.map(BrokerConfig.topicNames).getOrElse(Nil)
    names.toSeq.sorted.filter { name =>
      Segments.topicDirProblem(name) match {
        case None => true
        case Some(p) =>
          val note = s"topic '$name' skipped: $p"
          if (!found.contains(note)) found += note
          false
      }
    }
  }

  /** Queue ids that have a directory under `consumequeue/<topic>/` (`batchconsumequeue/`, §4.5), sorted, or
    * the queues of a RocksDB consume queue (§4.7).
    */
  def queueIds(topic: String): Seq[Int] = {
    val dir = queuesDir(topic) // checks the name
    rocksQueues.fold(
      fs.list(dir)
        .filter(e => e.isDir && e.name.nonEmpty && e.name.forall(c => c >= '0' && c <= '9'))
        .flatMap(e => scala.util.Try(e.name.toInt).toOption)
        .sorted
    )(_.queueIds(topic))
  }

  /** The queues of a RocksDB `consumequeue/` (§4.7, `storeType=defaultRocksDB`); None for queue files. */
  private lazy val rocksQueues: Option[RocksConsumeQueues] = {
    // `consumequeue/`, or `consumequeue_rocksdb/` (useSeparateStorePathForRocksdbCQ) without queue files
    val separate = fs.join(root, RocksDbConsumequeueDir)
    val path =
      if (RocksDb.isRocksDb(fs, consumequeueDir)) Some(consumequeueDir)
      else if (RocksDb.isRocksDb(fs, separate) && !fs.list(consumequeueDir).exists(_.isDir)) Some(separate)
      else None
    path.map { p =>
      val db = RocksDb.openLocal(fs, p, "the consume queue (storeType=defaultRocksDB)")
      openedRocksDb = Some(db)
      new RocksConsumeQueues(db)
    }
  }
  private var openedRocksDb: Option[RocksDb] = None

  /** The reader of (topic, queueId), opened once (a RocksDB, BatchCQ or file queue, §4). */
  def queue(topic: String, queueId: Int): QueueReader = {
    Segments.checkTopicDirName(topic)
    if (queueId < 0) throw new IllegalArgumentException(s"queue id must be >= 0, got $queueId")
    queues.getOrElseUpdate(
      (topic, queueId),
      rocksQueues match {
        case Some(rocks) => rocks.queue(topic, queueId, log.minOffset, log.end)
        case None =>
          val (segs, odd) = Segments.list(fs, fs.join(queuesDir(topic), queueId.toString))
          found ++= odd
          if (batchTopics(topic)) new BatchConsumeQueue(fs, segs, log.minOffset, log.end)
          else new ConsumeQueue(fs, segs, log.minOffset, log.end)
      }
    )
  }

  /** The first queue offset of the unit of (topic, queueId) holding `offset`: a committed offset inside a
    * BatchCQ batch starts with that batch, as getMessage returns it (§4.5).
    */
  def queueFloor(topic: String, queueId: Int, offset: Long): Long = queue(topic, queueId).floor(offset)

  /** (min, max) queue offsets of (topic, queueId): fillers and units outside the log skipped (§4.3). */
  def queueRange(topic: String, queueId: Int): (Long, Long) = {
    val q = queue(topic, queueId)
    (q.minOffset, q.maxOffset)
  }

  /** PHYSICALOFFSET of the last unit of (topic, queueId), units past the log's valid end included. */
  def queueLastPhy(topic: String, queueId: Int): Option[Long] = queue(topic, queueId).lastPhyOffset

  /** Units with queue offset in [fromQueueOffset, toQueueOffset) ∩ `queueRange`:
    * (queueOffset, physical offset, size, tagsCode).
    */
  def queueUnits(
      topic: String,
      queueId: Int,
      fromQueueOffset: Long,
      toQueueOffset: Long
  ): Iterator[(Long, Long, Int, Long)] =
    queue(topic, queueId).units(fromQueueOffset, toQueueOffset).map(u =>
      (u.queueOffset, u.phyOffset, u.size, u.tagsCode)
    )

  /** Queue offsets [start, end) of (topic, queueId) that lie in the queue's files, as runs in order: planning
    * splits these, never the offsets between files (python/rmqstore/store/consumequeue.py `spans`).
    */
  def queueSpans(topic: String, queueId: Int, start: Long, end: Long): Seq[(Long, Long)] =
    queue(topic, queueId).spans(start, end)

  /** Physical offsets of the units with queue offset in [start, end) ∩ `queueRange`, in queue order; with
    * `tags`, only units whose tagsCode may belong to one of them (hashes collide: confirm TAGS on the
    * record). A tagsCode that is not a tag hash is kept: ConsumeQueueExt addresses (§4.4) and every unit of
    * SCHEDULE_TOPIC_XXXX (a delivery time, §4.2). The slice's damaged units go to `damage` (docs/damage.md §3).
    */
  def queueOffsets(
      topic: String,
      queueId: Int,
      start: Long,
      end: Long,
      tags: Option[Seq[String]],
      damage: UnitDamage => Unit
  ): Iterator[Long] =
    queueSelection(topic, queueId, start, end, tags, damage).map(_.phyOffset)

  /** The units `queueOffsets` keeps (queue offset, physical offset, size): what a plan reading them selects. */
  def queueSelection(
      topic: String,
      queueId: Int,
      start: Long,
      end: Long,
      tags: Option[Seq[String]],
      damage: UnitDamage => Unit = _ => ()
  ): Iterator[QueueUnit] = {
    val units = queue(topic, queueId).sliceUnits(start, end, damage)
    val codes = tags.map(_.map(JavaHash.tagsCode).toSet)
    codes match {
      case Some(c) if topic != Layout.ScheduleTopic =>
        units.filter(u => c.contains(u.tagsCode) || ConsumeQueueUnit.isExtAddress(u.tagsCode))
      case _ => units
    }
  }

  /** Close the RocksDB consume queue if one was opened. */
  def close(): Unit = openedRocksDb.foreach(_.close())
}

private[spark] object Queues {
  final val ConsumequeueDir = "consumequeue"
  final val RocksDbConsumequeueDir = "consumequeue_rocksdb"
  final val BatchConsumequeueDir = "batchconsumequeue"
}
