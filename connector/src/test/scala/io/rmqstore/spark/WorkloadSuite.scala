package io.rmqstore.spark

import java.io.File
import java.nio.file.{Files, Path, Paths}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import plan._

/** The workload suite (tests/workloads/README.md) on the JVM planner and reader: every batch case of
  * tests/workloads/cases planned by `ScanPlanner` and read by `RmqColumnarReader` as Spark runs them, held
  * to the same access path, task count, offsets, error and skip counts as tests/workloads/test_workloads.py
  * holds the Python engine (design §7). Recipe stores are built by tests/workloads/stores.py (the Python
  * writer), so both engines read the same bytes.
  */
class WorkloadSuite extends AnyFunSuite with BeforeAndAfterAll {
  import WorkloadSuite.Outcome

  private val mapper = new ObjectMapper()
  private val casesDir = Paths.get("tests/workloads/cases")
  private val dir = Files.createTempDirectory("rmq-workloads")
  private val schema = StructType(Seq(StructField("commitLogOffset", LongType)))

  override def afterAll(): Unit =
    Files.walk(dir).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))

  /** Case name -> {"store": path, "manifest": ...}, from building every case's store once. */
  private lazy val built: JsonNode = {
    val python = sys.env.getOrElse("PYTHON", "python3")
    val builder = new ProcessBuilder(python, "tests/workloads/stores.py", dir.toString).redirectErrorStream(true)
    val pythonPath = (Paths.get("python").toAbsolutePath.toString +: sys.env.get("PYTHONPATH").toSeq)
    builder.environment().put("PYTHONPATH", pythonPath.mkString(File.pathSeparator))
    val process = builder.start()
    val output = new String(process.getInputStream.readAllBytes())
    assert(process.waitFor() == 0, s"$python tests/workloads/stores.py failed: $output")
    mapper.readTree(dir.resolve("index.json").toFile)
  }

  private val cases: Seq[(String, JsonNode)] =
    Files.list(casesDir).iterator.asScala.toSeq.map(_.getFileName.toString).filter(_.endsWith(".json")).sorted.map {
      file => file.stripSuffix(".json") -> mapper.readTree(casesDir.resolve(file).toFile)
    }

  /** A case's filter as planner predicates (storeTimestamp in epoch ms -> microseconds). */
  private def predicates(filter: JsonNode): Seq[Predicate] = filter.asScala.toSeq.map { triple =>
    val column = triple.get(0).asText
    def value(v: JsonNode): Any =
      if (v.isTextual) v.asText else if (column == "storeTimestamp") v.asLong * 1000L else v.asLong
    triple.get(1).asText match {
      case "in" => InSet(column, triple.get(2).asScala.map(value).toIndexedSeq)
      case op => Compare(
          column,
          Seq(Predicate.Eq, Predicate.Lt, Predicate.Le, Predicate.Gt, Predicate.Ge)
            .find(_.symbol == op).get,
          value(triple.get(2))
        )
    }
  }

  private def run(name: String, spec: JsonNode): Outcome = {
    val store = built.get(name).get("store").asText
    val stats = Files.createTempDirectory(dir, "stats")
    val caseOptions = spec.get("options").fields.asScala.map(e => e.getKey -> e.getValue.asText).toMap
    val opts = RmqOptions.parse((caseOptions ++ Map("path" -> store, "statsDir" -> stats.toString)).asJava)
    val filters = predicates(spec.get("query").get("filter"))
    val opened = RmqStores.open(opts, store, null)
    val (readPlan, every, end) =
      try {
        val fromOptions = OptionPredicates.forStore(opts, opened)
        val pushed = (if (opts.pushdown) filters else Seq.empty) ++ fromOptions
        val settings =
          ScanPlanner.Settings(opts.maxBytesPerPartition, opts.minPartitions, opts.keyProbePartitionThreshold)
        (ScanPlanner.plan(IndexedSeq(opened), IndexedSeq(pushed), settings), filters ++ fromOptions, opened.logEnd)
      } finally opened.close()
    val rows = mutable.ArrayBuffer.empty[Long]
    val error =
      try {
        for ((task, i) <- readPlan.tasks.zipWithIndex) {
          val reader = new RmqColumnarReader(
            RmqInputPartition(i, task, store, opts.brokerNames(0), end, every),
            schema,
            opts,
            null
          )
          try while (reader.next()) {
              val batch = reader.get()
              rows ++= (0 until batch.numRows).map(batch.column(0).getLong)
            }
          finally reader.close()
        }
        None
      } catch { case e: Exception => Some(String.valueOf(e.getMessage)) }
    val reads = Files.list(stats).iterator.asScala.toSeq.flatMap(f => Files.readAllLines(f).asScala)
      .map(mapper.readTree).filter(_.get("event").asText == "read")
    val skipped = (reads.map(_.get("invalid_records_skipped").asLong).sum, reads.map(_.get("bytes_skipped").asLong).sum)
    Outcome(readPlan.access.head, readPlan.tasks.size, rows.toSeq, error, skipped)
  }

  /** `{damagedOffset}`, `{damagedSegment}`, `{damagedSize}` of the first damage (tests/workloads/expect.py). */
  private def placeholders(manifest: JsonNode): Map[String, String] =
    if (manifest.isNull || manifest.get("damaged").isEmpty) Map.empty
    else {
      val at = manifest.get("damaged").get(0).asLong
      val segment = manifest.get("segmentSize").asLong
      val offsets = manifest.get("offsets").asScala.map(_.asLong).toIndexedSeq
      val size = offsets.indexOf(at) match {
        case -1 => Map.empty
        case i => Map("damagedSize" -> manifest.get("sizes").get(i).asText)
      }
      Map("damagedOffset" -> at.toString, "damagedSegment" -> f"${at / segment * segment}%020d") ++ size
    }

  private def fill(text: String, holes: Map[String, String]): String =
    holes.foldLeft(text) { case (t, (k, v)) => t.replace(s"{$k}", v) }

  private def expectedOffsets(want: JsonNode, manifest: JsonNode): Option[Seq[Long]] =
    if (want.has("offsets")) Some(want.get("offsets").asScala.map(_.asLong).toSeq)
    else if (want.has("ordinals")) {
      val range = want.get("ordinals").get("range")
      val (start, stop, step) = (range.get(0).asInt, range.get(1).asInt, range.get(2).asInt)
      val dropped = Option(want.get("ordinals").get("except")).fold(Set.empty[Int])(_.asScala.map(_.asInt).toSet)
      Some((start until stop by step).filterNot(dropped).map(i => manifest.get("offsets").get(i).asLong))
    } else None

  for ((name, spec) <- cases if !spec.get("query").has("read") || spec.get("query").get("read").asText == "batch")
    test(s"$name: ${spec.get("description").asText}") {
      val want = spec.get("expect")
      val manifest = built.get(name).get("manifest")
      val holes = placeholders(manifest)
      val got = run(name, spec)
      if (want.has("access")) assert(got.access == want.get("access").asText)
      if (want.has("tasks")) assert(got.tasks == want.get("tasks").asInt)
      if (want.has("error")) {
        assert(got.error.isDefined, s"no error; ${got.rows.size} rows (a silent skip in FAILFAST)")
        for (part <- want.get("error").asScala.map(p => fill(p.asText, holes)))
          assert(got.error.get.contains(part), s"'$part' not in '${got.error.get}'")
      } else {
        assert(got.error.isEmpty, got.error)
        val rows = got.rows.sorted
        expectedOffsets(want, manifest) match {
          case Some(offsets) => assert(rows == offsets.sorted)
          case None =>
            assert((rows.size, rows.head, rows.last) ==
              ((want.get("count").asInt, want.get("first").asLong, want.get("last").asLong)))
        }
        Option(want.get("skipped")).foreach { skipped =>
          assert(got.skipped._1 == skipped.get("records").asLong, got.skipped)
          Option(skipped.get("bytes")).foreach(b => assert(got.skipped._2 == fill(b.asText, holes).toLong, got.skipped))
        }
      }
    }
}

object WorkloadSuite {

  /** What one read returned: its plan, rows or the error, and the PERMISSIVE skip counts (records, bytes). */
  final case class Outcome(access: String, tasks: Int, rows: Seq[Long], error: Option[String], skipped: (Long, Long))
}
