package io.rmqstore.spark.format

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import scala.jdk.CollectionConverters._

/** Broker JSON files under `config/`: fastjson 1.x output with bare integer map keys (docs/format.md §1.4). */
object BrokerConfig {

  /** consumerOffset.json keys are `<topic>@<group>` (`ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR`). */
  final val TopicGroupSeparator = "@"

  // A JSON string (kept as is) or a bare integer key after `{` or `,`.
  private val StringOrBareKey = """"(?:[^"\\]|\\.)*"|([{,]\s*)(-?\d+)(\s*:)""".r
  private val mapper = new ObjectMapper()

  /** Parse broker JSON, quoting fastjson's bare integer keys (`{0:7}`) first. Throws
    * IllegalArgumentException with the position when the text is not JSON.
    */
  def parseFastjson(text: String): JsonNode = {
    val quoted = StringOrBareKey.replaceAllIn(
      text,
      m =>
        if (m.group(2) == null) scala.util.matching.Regex.quoteReplacement(m.matched)
        else m.group(1) + '"' + m.group(2) + '"' + m.group(3)
    )
    try mapper.readTree(quoted)
    catch {
      case e: com.fasterxml.jackson.core.JsonProcessingException =>
        val loc = e.getLocation
        val where = if (loc == null) "" else s" at line ${loc.getLineNr} column ${loc.getColumnNr}"
        throw new IllegalArgumentException(s"not fastjson/JSON$where: ${e.getOriginalMessage}")
    }
  }

  /** consumerOffset.json `offsetTable` -> {(topic, group): {queueId: next queue offset}} (§1.4).
    * Keys that do not split into exactly two parts at `@` are skipped, as the broker does.
    */
  def consumerOffsets(doc: JsonNode): Map[(String, String), Map[Int, Long]] = {
    val table = doc.path("offsetTable")
    if (!table.isObject) return Map.empty
    table.fields.asScala.flatMap { entry =>
      val parts = entry.getKey.split(TopicGroupSeparator, -1)
      if (parts.length != 2) None
      else {
        val offsets = entry.getValue
        if (!offsets.isObject)
          throw new IllegalArgumentException(s"offsetTable entry '${entry.getKey}' is not a queueId -> offset map")
        val queues = offsets.fields.asScala.map { q =>
          val id = scala.util.Try(q.getKey.toInt).toOption
          if (id.isEmpty || !q.getValue.canConvertToLong)
            throw new IllegalArgumentException(s"offsetTable entry '${entry.getKey}' is not a queueId -> offset map")
          id.get -> q.getValue.asLong
        }.toMap
        Some((parts(0), parts(1)) -> queues)
      }
    }.toMap
  }

  /** topics.json `topicConfigTable` topic names (§1.4). */
  def topicNames(doc: JsonNode): Seq[String] = {
    val table = doc.path("topicConfigTable")
    if (table.isMissingNode || table.isNull) Seq.empty
    else if (!table.isObject) throw new IllegalArgumentException("topicConfigTable is not a JSON object")
    else table.fieldNames.asScala.toSeq
  }
}
