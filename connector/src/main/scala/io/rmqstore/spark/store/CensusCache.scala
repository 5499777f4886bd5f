package io.rmqstore.spark.store

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.security.MessageDigest

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/** `Census.whole`'s tallies of one store kept on disk outside the store (docs/design.md §8.3, kind `census`), so a
  * new JVM's first aggregate answered from metadata reads no queue unit and no uncovered byte: one file,
  * `census/<identity's digest>.json` under `SegmentCache.root`, `{"version", "key", "tallies"}` where `key` is the
  * sha256 of what the tallies depend on (every commit-log segment and queue file with its size and modification
  * time, the log's bounds) and `tallies` is `[[topic, queueId, count, minQueueOffset, maxQueueOffset,
  * minPhyOffset, maxPhyOffset], ...]`, or null when the units name a record twice (`Census.tally` gives None).
  * The file holds the store's latest state only; failures to read or write it are ignored (counted again).
  */
private[store] final class CensusCache(identity: CacheIdentity) {
  import CensusCache._

  val path: Path = SegmentCache.root.resolve(Kind).resolve(identity.digest + ".json")

  /** The tallies kept for `key` (Some(None): the units name a record twice), None when none are. */
  def load(key: AnyRef): Option[Option[Map[(String, Int), Tally]]] =
    try {
      val doc = Mapper.readTree(Files.readAllBytes(path))
      val fits = doc != null && doc.path("version").isInt && doc.path("version").asInt == Version &&
        doc.path("key").asText == digest(key)
      val tallies = doc.path("tallies")
      if (!fits) None
      else if (tallies.isNull) Some(None)
      else Some(Some(tallies.elements.asScala.map(entry).toMap))
    } catch { case NonFatal(_) => None }

  /** Keep `tallies` for `key` in place of what the file held, by atomic rename. */
  def save(key: AnyRef, tallies: Option[Map[(String, Int), Tally]]): Unit = {
    val doc = new java.util.LinkedHashMap[String, Any]()
    doc.put("version", Version)
    doc.put("key", digest(key))
    doc.put(
      "tallies",
      tallies.map(_.toSeq.sortBy(_._1).map { case ((topic, queueId), t) =>
        java.util.Arrays.asList[AnyRef](
          topic,
          Int.box(queueId),
          Long.box(t.count),
          Long.box(t.minQueueOffset),
          Long.box(t.maxQueueOffset),
          Long.box(t.minPhyOffset),
          Long.box(t.maxPhyOffset)
        )
      }.asJava).orNull
    )
    try {
      Files.createDirectories(path.getParent)
      val tmp = Files.createTempFile(path.getParent, "", ".tmp")
      try {
        Files.write(tmp, Mapper.writeValueAsBytes(doc))
        SegmentCache.moveAtomically(tmp, path)
      } finally Files.deleteIfExists(tmp)
    } catch { case NonFatal(_) => () }
  }
}

private[store] object CensusCache {
  final val Kind = ContractStore.CensusCacheKind
  final val Version = ContractStore.CensusCacheVersion

  private val Mapper = new ObjectMapper()

  private def digest(key: AnyRef): String =
    MessageDigest.getInstance("SHA-256").digest(key.toString.getBytes(UTF_8)).map(b => f"$b%02x").mkString

  private def entry(node: JsonNode): ((String, Int), Tally) = {
    val t = new Tally
    t.count = node.get(2).asLong
    t.minQueueOffset = node.get(3).asLong
    t.maxQueueOffset = node.get(4).asLong
    t.minPhyOffset = node.get(5).asLong
    t.maxPhyOffset = node.get(6).asLong
    (node.get(0).asText, node.get(1).asInt) -> t
  }
}
