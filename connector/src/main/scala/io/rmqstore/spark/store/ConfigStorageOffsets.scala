package io.rmqstore.spark.store

import io.rmqstore.spark.format.ConfigStorageLayout
import io.rmqstore.spark.io.StoreFileSystem

/** The broker's consumer offsets in the v2 config storage (§4.8, `config/rdb/`, configManagerVersion=v2), like
  * python/rmqstore/store/config.py: the consumer-offset table only, LMQ offsets included (the broker's
  * `queryOffset` reads those there); the database's other tables are skipped by key prefix.
  */
private[store] object ConfigStorageOffsets {

  /** (topic, group) -> {queueId: offset} of the database at `path`; StoreCorruptionException naming the database
    * and the key for a record that does not fit the layout.
    */
  def read(fs: StoreFileSystem, path: String): Map[(String, String), Map[Int, Long]] = {
    val db = RocksDb.openLocal(fs, path, "config/rdb/ (v2 config storage)")
    try {
      val records = db.items(
        "default",
        ConfigStorageLayout.ConsumerOffsetsLower,
        Some(ConfigStorageLayout.ConsumerOffsetsUpper)
      ).map { case (key, value) =>
        try ConfigStorageLayout.consumerOffset(key, value)
        catch {
          case e: IllegalArgumentException =>
            val hex = key.map(b => f"${b & 0xff}%02x").mkString
            throw new StoreCorruptionException(path, 0, s"consumer-offset record key $hex: ${e.getMessage}")
        }
      }
      records.groupBy { case (group, topic, _, _) => (topic, group) }.map { case (topicGroup, queues) =>
        topicGroup -> queues.map { case (_, _, queueId, offset) => queueId -> offset }.toMap
      }
    } finally db.close()
  }
}
