package io.rmqstore.spark.store

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import com.fasterxml.jackson.databind.JsonNode

import io.rmqstore.spark.format.BrokerConfig
import io.rmqstore.spark.io.StoreFileSystem

/** The broker's files under `config/` and beside it (§4.8, §6): consumer offsets (JSON with the broker's
  * `.bak` fallback, or RocksDB: `config/consumerOffsets/`, the v2 config storage `config/rdb/`), topics.json, the
  * checkpoint and `abort`; like python/rmqstore/store/config.py. A service of the store facade (docs/design.md §1).
  */
private[spark] final class StoreConfig(fs: StoreFileSystem, root: String) {
  import StoreConfig._

  /** True when `abort` exists: a broker is running, or did not shut down cleanly (§6.2). */
  def abortPresent: Boolean = fs.info(fs.join(root, AbortFile)).isDefined

  /** getMinTimestamp() of the checkpoint when `abort` exists, else None: where abnormal recovery starts (§6.1,
    * §6.3). 0 (recovery from the first segment) without a readable checkpoint.
    */
  def crashMinTimestamp: Option[Long] =
    if (!abortPresent) None
    else {
      val path = fs.join(root, CheckpointFile)
      val bytes = if (fs.info(path).exists(!_.isDir)) fs.readAll(path) else Array.emptyByteArray
      if (bytes.length < 16) Some(0L)
      else {
        val buf = ByteBuffer.wrap(bytes)
        Some(math.max(0L, math.min(buf.getLong(0), buf.getLong(8)) - CheckpointMarginMs))
      }
    }

  /** Where the broker's consumer offsets are: the v2 config storage `config/rdb/`, else the RocksDB
    * `config/consumerOffsets/` (§4.8), when there is one, else consumerOffset.json.
    */
  private def consumerOffsetsSource: String =
    Seq(ConfigStorageRocksDb, ConsumerOffsetsRocksDb).map(fs.join(root, ConfigDir, _)).find(RocksDb.isRocksDb(fs, _))
      .getOrElse(fs.join(root, ConfigDir, ConsumerOffsetFile))

  /** (topic, group) -> {queueId: next queue offset} (§4.8): from the v2 config storage `config/rdb/` alone when it
    * is a RocksDB (`ConsumerOffsetManagerV2.load` reads nothing else; a consumerOffset.json is an older broker's),
    * else from config/consumerOffset.json (.bak fallback), or in RocksDB metadata mode from `config/consumerOffsets/`
    * unless the JSON's dataVersion counter is higher (`RocksDBConsumerOffsetManager.merge`).
    */
  def consumerOffsets: Map[(String, String), Map[Int, Long]] = {
    val source = consumerOffsetsSource
    if (source.endsWith(ConfigStorageRocksDb)) ConfigStorageOffsets.read(fs, source)
    else {
      val json = document(ConsumerOffsetFile)
      val doc =
        if (!source.endsWith(ConsumerOffsetsRocksDb)) json
        else {
          val (counter, table) = RocksConsumerOffsets.read(fs, source)
          json.filter(RocksConsumerOffsets.counter(_) > counter).orElse(Some(table))
        }
      doc.map { d =>
        try BrokerConfig.consumerOffsets(d)
        catch { case e: IllegalArgumentException => throw new StoreCorruptionException(source, 0, e.getMessage) }
      }.getOrElse(Map.empty)
    }
  }

  /** topic -> {queueId: next queue offset} that consumer `group` committed (`consumerOffsets`).
    * UnknownNameException naming the group, the close and the known ones when it committed none.
    */
  def groupOffsets(group: String): Map[String, Map[Int, Long]] = {
    val table = consumerOffsets
    val found = table.collect { case ((topic, g), offsets) if g == group => topic -> offsets }
    if (found.isEmpty)
      throw new UnknownNameException(
        "consumer group",
        group,
        table.keys.map(_._2).toSeq.distinct.sorted,
        s"has no committed offsets in $consumerOffsetsSource"
      )
    found
  }

  /** The parsed config/topics.json (`document`). */
  def topicsDocument: Option[JsonNode] = document(TopicsFile)

  /** The parsed `config/<name>`, else its `.bak` (like `ConfigManager.load`); None when neither exists
    * or both are empty. StoreCorruptionException naming both files when what exists cannot be parsed.
    */
  private def document(name: String): Option[JsonNode] = {
    val dir = fs.join(root, ConfigDir)
    val texts = Seq(fs.join(dir, name), fs.join(dir, name + BackupSuffix))
      .filter(path => fs.info(path).exists(!_.isDir))
      .map(path => path -> new String(fs.readAll(path), UTF_8))
      .filter(_._2.trim.nonEmpty)
    val parsed = texts.map { case (path, text) =>
      try Right(BrokerConfig.parseFastjson(text))
      catch { case e: IllegalArgumentException => Left(s"$path: ${e.getMessage}") }
    }
    parsed.collectFirst { case Right(doc) => doc }.orElse {
      val failures = parsed.collect { case Left(failure) => failure }
      if (failures.nonEmpty)
        throw new StoreCorruptionException(fs.join(dir, name), 0, "unparseable: " + failures.mkString("; "))
      None
    }
  }
}

private[spark] object StoreConfig {
  final val ConfigDir = "config"
  final val ConsumerOffsetFile = "consumerOffset.json"
  final val ConsumerOffsetsRocksDb = "consumerOffsets"

  /** `ConfigStorage`'s database (configManagerVersion=v2): consumer offsets keyed by group, topic, queueId (§4.8). */
  final val ConfigStorageRocksDb = "rdb"
  final val TopicsFile = "topics.json"
  final val BackupSuffix = ".bak"
  final val AbortFile = "abort"
  final val CheckpointFile = "checkpoint"

  /** getMinTimestamp steps back 3 s from the smaller of the physic/logics timestamps (§6.1). */
  final val CheckpointMarginMs = 3000L
}
