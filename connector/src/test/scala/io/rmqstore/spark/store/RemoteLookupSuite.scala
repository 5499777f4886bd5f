package io.rmqstore.spark.store

import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.{OptionPredicates, RmqColumnarReader, RmqInputPartition, RmqOptions, RmqStores}
import io.rmqstore.spark.format.IndexFile
import io.rmqstore.spark.io.{CachedPages, CountingFileSystem}
import io.rmqstore.spark.plan.{Compare, Predicate, ScanPlanner}

/** What a cold key lookup reads from a store behind a Hadoop file system (as on S3: no cache directory, a new
  * JVM), planned and read as Spark runs it, counted per file by `CountingFileSystem`: the walk for the valid
  * end from the index's last record, the consume queues' units (coverage), the uncovered and lacking bytes
  * (side index) and the probe's pages, never a whole segment (issue #9 item 4).
  */
class RemoteLookupSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val dir = Files.createTempDirectory("rmq-remote-lookup")

  override def afterAll(): Unit =
    Files.walk(dir).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))

  /** A demo store (`rmqstore demo`, the Python writer: topics, consume queues, ROLLBACK records, one index
    * file of the broker's geometry, sparse) of 24 MB in 16 MB segments: the active segment holds 8 MB.
    */
  private lazy val root: Path = {
    val store = dir.resolve("store")
    val python = sys.env.getOrElse("PYTHON", "python3")
    val demo = Seq("-m", "rmqstore.cli", "demo", "--size", "24MB", "--segment-size", "16MB", "--seed", "7")
    val process = new ProcessBuilder((python +: demo :+ "--no-progress" :+ store.toString).asJava)
      .redirectErrorStream(true).start()
    val output = new String(process.getInputStream.readAllBytes())
    assert(process.waitFor() == 0, s"$python ${demo.mkString(" ")} failed: $output")
    store
  }

  private def bytesRead(dir: String): Long = CountingFileSystem.reads(dir).map(_.bytes.toLong).sum

  test("a cold key lookup through Hadoop reads what the lookup needs, not the active segment") {
    val local = Store.open(StoreLocation(root.toString), null, None)
    val (key, end, indexedEnd, active, uncovered, lackingRanges, units) =
      try {
        var key: String = null
        val active = local.segments.filter(_.baseOffset < local.logEnd).last
        local.scan(active.baseOffset + (4 << 20), local.logEnd, verifyCrc = false, permissive = false) { v =>
          if (key == null && v.key != null && !v.key.contains(" ")) key = v.key
        }
        val units = for (t <- local.topics; q <- local.queueIds(t)) yield {
          val (lo, hi) = local.queueRange(t, q)
          (hi - lo) * 20
        }
        def bytes(ranges: Seq[(Long, Long)]) = ranges.map { case (a, b) => b - a }.sum
        (
          key,
          local.logEnd,
          local.indexedEnd,
          active,
          bytes(local.uncoveredRanges),
          local.lackingRanges,
          units.sum
        )
      } finally local.close()
    val lacking = lackingRanges.map { case (a, b) => b - a }.sum
    assert(key != null && active.contains(indexedEnd) && indexedEnd - active.baseOffset > (4 << 20))

    val path = CountingFileSystem.uri(root.toString)
    val options = RmqOptions.parse(Map("path" -> path).asJava)
    val conf = CountingFileSystem.conf
    val driver = RmqStores.open(options, path, conf)
    val predicates = Seq(Compare("key", Predicate.Eq, key)) ++ OptionPredicates.forStore(options, driver)
    val settings =
      ScanPlanner.Settings(options.maxBytesPerPartition, options.minPartitions, options.keyProbePartitionThreshold)
    val (plan, probes) =
      try ((ScanPlanner.plan(IndexedSeq(driver), IndexedSeq(predicates), settings), driver.indexProbes))
      finally driver.close()
    assert(plan.access == Seq("key-index"), plan.notes)
    val schema = StructType(Seq(StructField("commitLogOffset", LongType)))
    var rows = 0
    for ((task, i) <- plan.tasks.zipWithIndex) {
      val partition = RmqInputPartition(i, task, path, options.brokerNames(0), end, predicates)
      val reader = new RmqColumnarReader(partition, schema, options, conf)
      try while (reader.next()) rows += reader.get().numRows()
      finally reader.close()
    }
    assert(rows >= 1)

    val (log, queues, index) =
      (bytesRead(s"$root/commitlog"), bytesRead(s"$root/consumequeue"), bytesRead(s"$root/index"))
    val total = bytesRead(root.toString)
    info(
      f"cold key lookup: $total%,d bytes (commit log $log%,d, queues $queues%,d, index $index%,d); the active " +
        f"segment holds ${end - active.baseOffset}%,d bytes of records, ${end - indexedEnd}%,d after E; " +
        f"uncovered $uncovered%,d, lacking $lacking%,d, queue units $units%,d, $probes index probes"
    )
    // the walk from E (two record checks, [E, end) and the zeros after it in windows growing x4), the uncovered
    // and the lacking bytes read twice at most (gathered, else walked), two probes per row read
    val walk = 2L * CommitLog.ProbeBytes + CommitLog.ResumeWindow + 5 * (end - indexedEnd)
    assert(log <= walk + 2 * (uncovered + lacking) + 2L * CommitLog.ProbeBytes * (rows + 1))
    // every queue's units, found in windows growing x2 from FirstWindowUnits per file
    val queueFiles = Files.walk(root.resolve("consumequeue")).iterator.asScala.count(Files.isRegularFile(_))
    assert(queues <= 2 * (units + queueFiles * 20L * ConsumeQueue.FirstWindowUnits))
    // the one index file's header and entry #0, its geometry samples (entries, slots, and the slots, links
    // and entries they point at: `IndexFile.geometryProblem`), and a slot and an entry page per probe
    val pages = 2 + 5 * IndexFile.GeometrySamples + 2 * probes
    assert(index <= pages * CachedPages.PageSize)
    assert(log < (end - active.baseOffset) / 10)

    // an executor's probe task opens the store after the plan built the side index: it reads it from the cache
    // directory (keyed by the listed mtimes), not the lacking ranges of the log; the records at the index
    // files' ends (`SideIndex.indexHoles`, 8 bytes each) are all it reads of the log
    val (before, indexBefore) = (bytesRead(s"$root/commitlog"), bytesRead(s"$root/index"))
    val executor = RmqStores.open(options, path, conf, knownEnd = Some(end))
    val (indexFiles, taskProbes) =
      try {
        val side = executor.sideIndex(lackingRanges)
        assert(side.note.isEmpty && side.parts.nonEmpty)
        assert(executor.indexLookup(executor.keyTopics(side), Seq(key), lackingRanges).nonEmpty)
        (executor.indexFiles.size, executor.indexProbes)
      } finally executor.close()
    val (task, taskIndex) = (bytesRead(s"$root/commitlog") - before, bytesRead(s"$root/index") - indexBefore)
    info(f"an executor's key probe after the plan read $task%,d bytes of the log ($lacking%,d lacking) and " +
      f"$taskIndex%,d of the index ($index%,d for the plan)")
    assert(task <= 2L * 8 * indexFiles)
    // the geometry verdicts of this JVM: the header and, per probe, a slot page and an entry page
    assert(taskIndex <= (1 + 2 * taskProbes) * CachedPages.PageSize)
  }
}
