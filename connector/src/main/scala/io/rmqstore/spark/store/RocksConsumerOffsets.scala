package io.rmqstore.spark.store

import java.nio.charset.StandardCharsets.UTF_8

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.JsonNodeFactory

import io.rmqstore.spark.format.BrokerConfig
import io.rmqstore.spark.io.StoreFileSystem

/** The broker's consumer offsets in RocksDB metadata mode (§4.8, `RocksDBConsumerOffsetManager`): the `default`
  * column family maps topic@group to `{"offsetTable": {queueId: offset}}`, the `kvDataVersion` family holds the
  * table's dataVersion. Like python/rmqstore/store/config.py.
  */
private[store] object RocksConsumerOffsets {
  final val KvDataVersionFamily = "kvDataVersion"
  final val KvDataVersionKey: Array[Byte] = "kvDataVersionKey".getBytes(UTF_8)

  /** (dataVersion counter, a consumerOffset.json-shaped document of the table) of the RocksDB at `path`. */
  def read(fs: StoreFileSystem, path: String): (Long, JsonNode) = {
    val db = RocksDb.openLocal(fs, path, "config/consumerOffsets/ (RocksDB consumer offsets)")
    try {
      val table = JsonNodeFactory.instance.objectNode()
      for ((key, value) <- db.items("default", Array.emptyByteArray, None)) {
        val name = new String(key, UTF_8)
        val entry =
          try BrokerConfig.parseFastjson(new String(value, UTF_8))
          catch {
            case e: IllegalArgumentException =>
              throw new StoreCorruptionException(path, 0, s"entry '$name' is not an offset table: ${e.getMessage}")
          }
        table.set[JsonNode](name, Option(entry.get("offsetTable")).getOrElse(JsonNodeFactory.instance.objectNode()))
      }
      val version =
        if (db.families.contains(KvDataVersionFamily)) db.get(KvDataVersionFamily, KvDataVersionKey) else None
      val doc = JsonNodeFactory.instance.objectNode()
      doc.set[JsonNode]("offsetTable", table)
      (version.fold(0L)(v => versionCounter(BrokerConfig.parseFastjson(new String(v, UTF_8)))), doc)
    } finally db.close()
  }

  /** A document's `dataVersion.counter` (0 when absent), which the broker compares to pick a table. */
  def counter(doc: JsonNode): Long = versionCounter(doc.path("dataVersion"))

  /** A DataVersion's `counter` (0 when absent). */
  private def versionCounter(version: JsonNode): Long = {
    val c = version.path("counter")
    if (c.isIntegralNumber) c.asLong else 0L
  }
}
