package io.rmqstore.spark.plan

import java.nio.file.Paths

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.funsuite.AnyFunSuite

/** `Split` gives the exact outputs of tests/plan/split_vectors.json, the vectors tests/plan/test_split.py
  * checks python/rmqstore/plan/tasks.py against: both engines cut work alike.
  */
class SplitSuite extends AnyFunSuite {
  private val vectors = new ObjectMapper().readTree(Paths.get("tests/plan/split_vectors.json").toFile)

  private def long(n: JsonNode, field: String): Long = n.get(field).asLong
  private def opt(n: JsonNode, field: String): Option[JsonNode] = Option(n.get(field)).filterNot(_.isNull)
  private def pairs(n: JsonNode): Seq[(Long, Long)] =
    n.elements.asScala.map(p => (p.get(0).asLong, p.get(1).asLong)).toSeq

  /** `Split`'s result for a vector's arguments, shaped as the JSON Python's result serializes to. */
  private def run(name: String, a: JsonNode): Any = {
    def minTasks = opt(a, "min_tasks").map(_.asInt)
    def asPairs(out: Seq[(Long, Long)]) = out.map { case (x, y) => Seq(x, y) }
    name match {
      case "task_count" => Split.taskCount(long(a, "total"), long(a, "per_task"), minTasks)
      case "task_size" => Split.taskSize(long(a, "total"), long(a, "max_size"), minTasks)
      case "even_cuts" => asPairs(Split.evenCuts(long(a, "lo"), long(a, "hi"), long(a, "pieces")))
      case "split_spans" => asPairs(Split.splitSpans(pairs(a.get("spans")), long(a, "max_size")))
      case "grid_spans" => asPairs(Split.gridSpans(long(a, "lo"), long(a, "hi"), long(a, "step")))
      case "split_offsets" =>
        val offsets = a.get("offsets").elements.asScala.map(_.asLong).toArray
        Split.splitOffsets(offsets, long(a, "per_task"), minTasks).map(_.toSeq)
      case "pack_ranges" =>
        Split.packRanges(pairs(a.get("ranges")), long(a, "capacity"), opt(a, "max_ranges").map(_.asInt))
          .map(_.map { case (i, s, e) => Seq(i.toLong, s, e) })
      case "group_items" =>
        val weights = a.get("weights").elements.asScala.map(_.asDouble).toSeq
        Split.groupItems(weights, opt(a, "at_least").map(_.asDouble), opt(a, "at_most").map(_.asDouble))
          .map(_.map(_.toLong))
    }
  }

  /** A JSON result as nested Seqs of Longs (or a Long). */
  private def plain(n: JsonNode): Any = if (n.isArray) n.elements.asScala.map(plain).toSeq else n.asLong

  for (name <- vectors.fieldNames.asScala.toSeq if name != "comment") {
    test(s"$name gives the shared vectors' exact outputs") {
      val cases = vectors.get(name).elements.asScala.toSeq
      assert(cases.size >= 2)
      for (c <- cases) assert(run(name, c.get("args")) == plain(c.get("out")), c)
    }
  }

  test("splitSpans refuses a non-positive size, as Python does") {
    val e = intercept[IllegalArgumentException](Split.splitSpans(Seq((0L, 10L)), 0))
    assert(e.getMessage == "max_size must be positive, got 0")
  }
}
