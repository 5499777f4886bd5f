package io.rmqstore.spark.store

import com.fasterxml.jackson.databind.JsonNode

import io.rmqstore.spark.io.{FileEntry, StoreFileSystem}

/** One feature of a store's shape: `key` (a name in `Shape`), and the store files that show it. */
final case class Feature(key: String, evidence: String) {
  def title: String = Shape.Titles(key)
  override def toString: String = s"$title ($evidence)"
}

/** The RocketMQ features a store's files show (§1.6); none is RocketMQ's default shape. */
final case class Shape(features: Seq[Feature]) {
  def get(key: String): Option[Feature] = features.find(_.key == key)
  def name: String = if (features.isEmpty) "default" else features.map(_.key).mkString(", ")
  def describe: String = if (features.isEmpty) "default" else features.mkString("; ")
}

/** A store whose shape rmqstore cannot read for what was asked: names the feature, its files, the reader
  * refused and what to do (`Shape.Advice`).
  */
final class UnsupportedShapeException(location: String, val feature: Feature, reader: String)
    extends StoreException(s"$location: $feature: $reader refused: ${Shape.Advice(feature.key)}")

/** The store shapes of python/rmqstore/store/shape.py, with the same names and words: `detect` finds the
  * features, `refuse` raises for those rmqstore cannot read yet.
  */
object Shape {
  final val Dledger = "dledger"
  final val RocksdbConsumeQueue = "rocksdb-consumequeue"
  final val RocksdbOffsets = "rocksdb-offsets"
  final val BatchConsumeQueue = "batchcq"
  final val Lmq = "lmq"
  final val ConsumeQueueExt = "cqext"
  final val Compaction = "compaction"
  final val Timer = "timer"
  final val NoIndex = "no-index"

  final val Titles: Map[String, String] = Map(
    Dledger -> "DLedger commit log",
    RocksdbConsumeQueue -> "RocksDB consume queue",
    RocksdbOffsets -> "RocksDB consumer offsets",
    BatchConsumeQueue -> "BatchCQ topics",
    Lmq -> "LMQ queues",
    ConsumeQueueExt -> "consume-queue ext",
    Compaction -> "compaction logs",
    Timer -> "timer",
    NoIndex -> "no index"
  )

  /** What rmqstore cannot do with a feature and what to do instead: the features it refuses. */
  final val Advice: Map[String, String] = Map(
    Dledger -> ("rmqstore reads a DLedger log (docs/format.md §2.13), but not together with the commitlog/ " +
      "a store switched to DLedger keeps below dividedCommitlogOffset; read the records of both " +
      "through a broker started on this store (enableDLegerCommitLog=true)")
  )

  final val DledgerPrefix = "dledger-"
  final val DledgerData = "data"
  private val RocksdbMarkers = Set("CURRENT", "IDENTITY")
  private val LmqPrefix = "%LMQ%"
  private val QueueType = "queue.type"

  /** UnsupportedShapeException when `shape` has the feature `key` (one of `Advice`). */
  def refuse(location: String, shape: Shape, key: String, reader: String): Unit =
    shape.get(key).foreach(f => throw new UnsupportedShapeException(location, f, reader))

  /** The data directories of a DLedger commit log under the store root (§2.13): `dledger-<selfId>/data/`. */
  def dledgerDirs(fs: StoreFileSystem, root: String): Seq[String] = dledgerMembers(fs, root).map(_._2)

  /** The DLedger commit log of a store, with its data directories (relative to the root) as evidence. */
  def dledgerFeature(fs: StoreFileSystem, root: String): Option[Feature] = {
    val found = dledgerMembers(fs, root).map { case (name, _) => s"$name/$DledgerData/" }
    if (found.isEmpty) None else Some(Feature(Dledger, found.mkString(", ")))
  }

  private def dledgerMembers(fs: StoreFileSystem, root: String): Seq[(String, String)] =
    entries(fs, root).filter(e => e.isDir && e.name.startsWith(DledgerPrefix))
      .map(e => e.name -> fs.join(e.path, DledgerData)).filter(m => fs.isDir(m._2))

  /** Every feature the store's files show (§1.6); `topics` is config/topics.json when it has one. */
  def detect(fs: StoreFileSystem, root: String, topics: Option[JsonNode]): Shape = {
    val top = entries(fs, root).map(e => e.name -> e).toMap
    val found = Seq.newBuilder[Feature]
    dledgerFeature(fs, root).foreach(found += _)
    val queues = entries(fs, fs.join(root, "consumequeue"))
    val rocks = queues.filter(e => !e.isDir && isRocksdbFile(e.name)).map(_.name).sorted
    if (rocks.nonEmpty || top.get("consumequeue_rocksdb").exists(_.isDir))
      found += Feature(
        RocksdbConsumeQueue,
        if (rocks.isEmpty) "consumequeue_rocksdb/"
        else s"consumequeue/ is a RocksDB database (${rocks.take(3).mkString(", ")})"
      )
    val config = fs.join(root, "config")
    val rocksOffsets = Seq("consumerOffsets", "rdb")
      .filter(name => entries(fs, fs.join(config, name)).exists(e => isRocksdbFile(e.name)))
      .map(name => s"config/$name/")
    if (rocksOffsets.nonEmpty) found += Feature(RocksdbOffsets, rocksOffsets.mkString(", "))
    val batch = topics.toSeq.flatMap(batchTopics).sorted
    if (batch.nonEmpty || top.contains("batchconsumequeue"))
      found += Feature(
        BatchConsumeQueue,
        ((if (top.contains("batchconsumequeue")) Seq("batchconsumequeue/") else Nil) ++
          (if (batch.nonEmpty) Seq(s"queue.type=BatchCQ in config/topics.json: ${batch.take(5).mkString(", ")}")
           else Nil)).mkString(", ")
      )
    val lmq = queues.count(e => e.isDir && e.name.startsWith(LmqPrefix))
    if (lmq > 0) found += Feature(Lmq, s"$lmq $LmqPrefix queue(s) in consumequeue/")
    if (top.contains("consumequeue_ext")) found += Feature(ConsumeQueueExt, "consumequeue_ext/")
    if (entries(fs, fs.join(root, "compaction")).exists(e => e.isDir && e.name == "compactionLog"))
      found += Feature(Compaction, "compaction/compactionLog/")
    val timer = Seq("timerlog/", "timerwheel").filter(n => top.contains(n.stripSuffix("/")))
    if (timer.nonEmpty) found += Feature(Timer, timer.mkString(", "))
    if (top.get("index").forall(e => entries(fs, e.path).isEmpty)) found += Feature(NoIndex, "no index files")
    Shape(found.result())
  }

  private def isRocksdbFile(name: String): Boolean =
    RocksdbMarkers.contains(name) || name.startsWith("MANIFEST-") || name.endsWith(".sst")

  /** Topics of topics.json whose attribute queue.type (or +queue.type) is BatchCQ. */
  private def batchTopics(doc: JsonNode): Seq[String] = {
    val table = doc.path("topicConfigTable")
    val names = Seq.newBuilder[String]
    table.fieldNames().forEachRemaining { topic =>
      val attributes = table.path(topic).path("attributes")
      val value = Option(attributes.get(QueueType)).orElse(Option(attributes.get("+" + QueueType)))
      if (value.exists(v => v.isTextual && v.asText == "BatchCQ")) names += topic
    }
    names.result()
  }

  /** The entries of a directory; none when it does not exist or cannot be listed. */
  private def entries(fs: StoreFileSystem, directory: String): Seq[FileEntry] =
    try if (fs.isDir(directory)) fs.list(directory) else Nil
    catch { case _: java.io.IOException => Nil }
}
