package io.rmqstore.spark.stream

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.connector.read.streaming.Offset

import io.rmqstore.spark.store.{CacheIdentity, Names}

/** Where the stream stands in one store: `position` (log mode: the commit-log position of the next
  * record, always a record or segment start) or `queues` (queue mode: the next queue offset of every
  * (topic, queueId)); python/rmqstore/spark/offsets.py `StoreOffset`.
  */
final case class StoreOffset(position: Option[Long] = None, queues: Map[(String, Int), Long] = Map.empty) {

  /** The JSON object of this store, as the Python engine writes it (topics sorted, queue ids ascending). */
  def toJson: PyJson.Obj = position match {
    case Some(p) => Seq(StoreOffset.LogKey -> PyJson.Num(p))
    case None =>
      val byTopic = queues.toSeq.sortBy(_._1)(StoreOffset.QueueOrder).groupBy(_._1._1)
      val topics = byTopic.keys.toSeq.sorted(PyJson.StringOrder)
      Seq(StoreOffset.QueuesKey -> PyJson.ObjValue(topics.map { t =>
        t -> PyJson.ObjValue(byTopic(t).sortBy(_._1._2).map { case ((_, q), o) => q.toString -> PyJson.Num(o) })
      }))
  }
}

object StoreOffset {
  val LogKey = "commitLogOffset"
  val QueuesKey = "queueOffsets"

  def log(position: Long): StoreOffset = StoreOffset(position = Some(position))

  /** Python's order of (topic, queueId) tuples: topics by code point, then queue id. */
  val QueueOrder: Ordering[(String, Int)] = Ordering.Tuple2(PyJson.StringOrder, Ordering.Int)

  def fromJson(doc: JsonNode): StoreOffset =
    if (doc.isObject && doc.has(LogKey)) log(doc.get(LogKey).asLong)
    else if (doc.isObject && doc.has(QueuesKey))
      StoreOffset(queues = doc.get(QueuesKey).properties().asScala.flatMap { topic =>
        topic.getValue.properties().asScala.map(q => (topic.getKey, q.getKey.toInt) -> q.getValue.asLong)
      }.toMap)
    else throw new IllegalArgumentException(s"rmqstore: not a stream offset: $doc (expected '$LogKey' or '$QueuesKey')")
}

/** The offset of the rmqstore stream: one `StoreOffset` per store, keyed by broker name in option order.
  * `json` is byte for byte what the Python engine writes for the same state (`json.dumps` of
  * `offsets_to_json`), and the parser takes any JSON layout, so a checkpoint written by one engine
  * resumes on the other. Spark compares offsets by `json`.
  */
final case class RmqSourceOffset(stores: Seq[(String, StoreOffset)]) extends Offset {
  override val json: String = PyJson.render(stores.map { case (b, o) => b -> PyJson.ObjValue(o.toJson) })

  def apply(broker: String): StoreOffset = stores.find(_._1 == broker).get._2
}

object RmqSourceOffset {
  private val mapper = new ObjectMapper()

  /** Parse a checkpointed offset; every store of the query must be present. */
  def parse(json: String, brokers: Seq[String]): RmqSourceOffset = {
    val doc = mapper.readTree(json)
    val missing = brokers.filterNot(b => doc != null && doc.has(b))
    if (missing.nonEmpty)
      throw new IllegalArgumentException(
        s"rmqstore: the checkpointed offset $json has no entry for store(s) " +
          s"${missing.map(Names.repr).mkString("[", ", ", "]")}; the stores of a query cannot change between " +
          "restarts (use a new checkpoint)"
      )
    RmqSourceOffset(brokers.map(b => b -> StoreOffset.fromJson(doc.get(b))))
  }

  def from(offset: Offset, brokers: Seq[String]): RmqSourceOffset = offset match {
    case o: RmqSourceOffset => o
    case other => parse(other.json, brokers)
  }
}

/** An offset that only reports (`reportLatestOffset`): shown as the source's latestOffset in the progress. */
final case class ReportedOffset(json: String) extends Offset

/** JSON written exactly as Python's `json.dumps` with default arguments writes it: `", "` and `": "`
  * separators, non-ASCII and control characters as `\\uXXXX` (UTF-16 units), `"` and `\\` escaped.
  */
object PyJson {
  sealed trait Value
  final case class Num(value: Long) extends Value
  final case class ObjValue(fields: Obj) extends Value
  type Obj = Seq[(String, Value)]

  /** Python's string order (by code point; Java's compares UTF-16 units, which differs above U+FFFF). */
  val StringOrder: Ordering[String] = (a: String, b: String) => {
    val (x, y) = (a.codePoints.toArray, b.codePoints.toArray)
    val n = math.min(x.length, y.length)
    var i = 0
    while (i < n && x(i) == y(i)) i += 1
    if (i < n) Integer.compare(x(i), y(i)) else Integer.compare(x.length, y.length)
  }

  def render(obj: Obj): String = {
    val sb = new StringBuilder
    writeObj(sb, obj)
    sb.toString
  }

  private def writeObj(sb: StringBuilder, obj: Obj): Unit = {
    sb += '{'
    obj.zipWithIndex.foreach { case ((k, v), i) =>
      if (i > 0) sb ++= ", "
      writeString(sb, k)
      sb ++= ": "
      v match {
        case Num(n) => sb ++= n.toString
        case ObjValue(o) => writeObj(sb, o)
      }
    }
    sb += '}'
  }

  /** Python's `json.dumps` of a string, the rule the cache identity uses (`CacheIdentity.pythonJson`). */
  private def writeString(sb: StringBuilder, s: String): Unit = sb ++= CacheIdentity.pythonJson(s)
}
