package io.rmqstore.spark

import java.nio.file.{Files, Path, Paths, StandardOpenOption}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.commons.codec.digest.MurmurHash3
import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

import format.Layout
import plan._
import store.Oracle
import store.Oracle.{records, storeDir}

/** Access paths of the planner on stores written by real RocketMQ: every index and consume-queue plan
  * returns exactly the rows a scan confirmed against the same predicates returns (transaction PREPARED /
  * ROLLBACK records, queues and index behind a crashed log included), and says which path it took.
  */
class PlannerSuite extends AnyFunSuite {
  private val schema = StructType(Seq(StructField("commitLogOffset", LongType)))

  /** (access, tasks, notes, commitLogOffsets in task order) of reading `path` with `predicates` pushed. */
  private def read(path: String, predicates: Seq[Predicate], options: (String, String)*): Read =
    readWith(ScanPlanner.DenseShare)(path, predicates, options: _*)

  /** `read` with the queue path wherever a topic predicate allows it (`ScanPlanner.DenseShare` out of reach). */
  private def readQueues(path: String, predicates: Seq[Predicate], options: (String, String)*): Read =
    readWith(Double.PositiveInfinity)(path, predicates, options: _*)

  private def readWith(denseShare: Double)(path: String, predicates: Seq[Predicate], options: (String, String)*) = {
    val opts = RmqOptions.parse((Map("path" -> path) ++ options).asJava)
    val store = RmqStores.open(opts, path, null)
    val (plan, consumed, end) =
      try {
        val consumed = predicates ++ OptionPredicates.forStore(opts, store)
        val settings = ScanPlanner.Settings(
          opts.maxBytesPerPartition,
          opts.minPartitions,
          opts.keyProbePartitionThreshold,
          denseShare
        )
        (ScanPlanner.plan(IndexedSeq(store), IndexedSeq(consumed), settings), consumed, store.logEnd)
      } finally store.close()
    val rows = plan.tasks.zipWithIndex.flatMap { case (task, i) =>
      val partition = RmqInputPartition(i, task, path, opts.brokerNames(0), end, consumed)
      val reader = new RmqColumnarReader(partition, schema, opts, null)
      val out = mutable.ArrayBuffer.empty[Long]
      try while (reader.next()) {
          val batch = reader.get()
          out ++= (0 until batch.numRows).map(batch.column(0).getLong)
        }
      finally reader.close()
      out
    }
    Read(plan.access.head, plan.tasks, plan.notes, rows, scanned(path, consumed))
  }

  /** What a scan confirmed against `predicates` returns. */
  private def scanned(path: String, predicates: Seq[Predicate]): Seq[Long] = {
    val store = RmqStores.open(RmqOptions.parse(Map("path" -> path).asJava), path, null)
    try {
      val out = mutable.ArrayBuffer.empty[Long]
      store.scan(Long.MinValue, Long.MaxValue, verifyCrc = false, permissive = false) { v =>
        if (Confirm.matches(v, predicates)) out += v.physicalOffset
      }
      out.toSeq
    } finally store.close()
  }

  private def txType(r: com.fasterxml.jackson.databind.JsonNode) =
    r.get("sysFlag").asInt & Layout.SysFlagTransactionMask

  test("probe buckets are mmh3's (python/rmqstore/plan/tasks.py probe_bucket), non-ASCII values too") {
    // mmh3.hash(v, signed=False) for each value
    val expected = Seq(
      "" -> 0L,
      "a" -> 1009084850L,
      "ab" -> 2613040991L,
      "abc" -> 3017643002L,
      "abcd" -> 1139631978L,
      "order-32" -> 1825722261L,
      "ключ" -> 2589532226L,
      "鍵🔑" -> 798329728L,
      "k1 k2" -> 1064669344L,
      "é" -> 269551495L, // tails of 1 to 3 bytes with the high bit set (sign extension)
      "aé" -> 52038863L,
      "\u00ff" -> 2978568462L,
      "ü€" -> 163754750L
    )
    for ((value, hash) <- expected) {
      assert(Integer.toUnsignedLong(MurmurHash3.hash32x86(value.getBytes("UTF-8"))) == hash, value)
      assert(ProbeBucket(value, 7) == (hash % 7).toInt, value)
    }
  }

  for (name <- Oracle.main) {
    val path = storeDir(name)

    test(s"$name: uncovered ranges hold exactly the PREPARED / ROLLBACK records, unindexed ones the ROLLBACKs") {
      val store = Oracle.open(name)
      try {
        def startingIn(ranges: Seq[(Long, Long)]) = records(name).map(_.get("commitLogOffset").asLong)
          .filter(o => ranges.exists { case (a, b) => a <= o && o < b })
        val transactional = records(name).filter(r => txType(r) == 4 || txType(r) == 12)
        assert(startingIn(store.uncoveredRanges) == transactional.map(_.get("commitLogOffset").asLong))
        val rollbacks = records(name).filter(r => txType(r) == 12).map(_.get("commitLogOffset").asLong)
        assert(startingIn(store.unindexedRanges) == rollbacks)
        val indexedTopics = records(name).filter(r => txType(r) != 12).map(_.get("topic").asText).toSet
        assert(indexedTopics.subsetOf(store.indexedTopics.toSet), store.indexedTopics)
      } finally store.close()
    }
  }

  for (name <- Oracle.main ++ Oracle.crash) {
    val path = storeDir(name)
    lazy val all = records(name)
    lazy val keys = all.flatMap(r => Option(Oracle.text(r, "key"))).distinct
    lazy val uniqKeys = all.flatMap(r => Option(Oracle.text(r, "uniqKey"))).distinct
    lazy val topics = all.map(_.get("topic").asText).distinct.sorted

    test(s"$name: key, uniqKey and keys lookups read the index and return what a scan returns") {
      val probeable = keys.filter(k => k.split(" ").exists(_.nonEmpty))
      val byKey = read(path, Seq(InSet("key", probeable.toIndexedSeq)))
      byKey.assertExact("key IN")
      assert(byKey.access == "key-index")
      assert(byKey.rows.size < all.size || all.forall(r => Oracle.text(r, "key") != null))
      val tokens = probeable.flatMap(_.split(" ").filter(_.nonEmpty)).distinct
      for (token <- tokens.take(20)) {
        val r = read(path, Seq(KeysContainAny(IndexedSeq(token))))
        r.assertExact(s"keys contain $token")
        assert(r.access == "key-index")
      }
      val byUniq = read(path, Seq(InSet("uniqKey", uniqKeys.toIndexedSeq)))
      byUniq.assertExact("uniqKey IN")
      assert(byUniq.access == "key-index")
      // what the index lacks (ROLLBACK records, the log past its end) is probed in the side index: one offsets task
      assert(byKey.tasks.map(_.getClass) == Seq(classOf[OffsetsTask]), byKey.tasks)
      val store = Oracle.open(name)
      try {
        val side = store.sideIndex(store.lackingRanges)
        for (r <- all if txType(r) == 12; key <- Option(Oracle.text(r, "uniqKey")))
          assert(side.candidates(r.get("topic").asText, key).contains(r.get("commitLogOffset").asLong), key)
      } finally store.close()
      val allKeysAbsentOnes = read(path, Seq(KeysContainAny(IndexedSeq("no-such-key"))))
      allKeysAbsentOnes.assertExact("absent key")
    }

    test(s"$name: many values are probed on executors by hash, each row once") {
      val probeable = keys.filter(k => k.split(" ").exists(_.nonEmpty)).toIndexedSeq
      val r = read(
        path,
        Seq(InSet("key", probeable ++ (0 until 40).map(i => s"absent-$i"))),
        "keyProbePartitionThreshold" -> "4"
      )
      r.assertExact("key IN, executors")
      assert(r.access == "key-index")
      assert(r.tasks.count(_.isInstanceOf[KeyProbeTask]) > 1, r.tasks)
      assert(r.rows.distinct.size == r.rows.size)
      val byUniq = read(path, Seq(InSet("uniqKey", uniqKeys.toIndexedSeq)), "keyProbePartitionThreshold" -> "3")
      byUniq.assertExact("uniqKey IN, executors")
      assert(byUniq.rows.distinct.size == byUniq.rows.size)
    }

    test(s"$name: an OR of key and uniqKey values is the union of their probes") {
      val or = AnyOf(IndexedSeq(
        IndexedSeq(Compare("key", Predicate.Eq, keys.find(_.trim.nonEmpty).get)),
        IndexedSeq(InSet("uniqKey", uniqKeys.take(3).toIndexedSeq)),
        IndexedSeq(Compare("commitLogOffset", Predicate.Eq, all.last.get("commitLogOffset").asLong))
      ))
      val r = read(path, Seq(or))
      r.assertExact("OR")
      assert(r.access == "key-index")
      val half = AnyOf(IndexedSeq(
        IndexedSeq(Compare("key", Predicate.Eq, keys.head)),
        IndexedSeq(Compare("queueId", Predicate.Eq, 0L))
      ))
      val scan = read(path, Seq(half))
      scan.assertExact("OR with an unpushable branch")
      assert(scan.access == "scan")
    }

    test(s"$name: topic, queue and tags filters read consume queues plus what they do not cover (DenseShare aside)") {
      for (topic <- topics) {
        val r = readQueues(path, Seq(InSet("topic", IndexedSeq(topic))))
        r.assertExact(s"topic $topic")
        assert(r.access == "queues")
      }
      val tagged = all.filter(r => Oracle.text(r, "tags") != null)
      for (tags <- tagged.map(r => Oracle.text(r, "tags")).distinct.take(5)) {
        val topic = tagged.find(r => Oracle.text(r, "tags") == tags).get.get("topic").asText
        val r = readQueues(path, Seq(Compare("topic", Predicate.Eq, topic), Compare("tags", Predicate.Eq, tags)))
        r.assertExact(s"topic $topic tags $tags")
        assert(r.access == "queues")
      }
      val slice = readQueues(
        path,
        Seq(
          InSet("topic", topics.toIndexedSeq),
          Compare("queueId", Predicate.Eq, 0L),
          Compare("queueOffset", Predicate.Ge, 1L),
          Compare("queueOffset", Predicate.Lt, 5L)
        )
      )
      slice.assertExact("queue slice")
      assert(slice.access == "queues")
    }

    test(s"$name: startingOffsets / endingOffsets windows select queue units") {
      val topic =
        topics.find(t => all.count(r => r.get("topic").asText == t && txType(r) != 4 && txType(r) != 12) > 2).get
      val r = read(path, Seq.empty, "startingOffsets" -> s"""{"$topic": {"0": 1}}""", "endingOffsets" -> "latest")
      r.assertExact("windows")
      assert(r.access == "queues" && r.rows.nonEmpty)
      val k = read(
        path,
        Seq(KeysContainAny(IndexedSeq(keys.find(_.trim.nonEmpty).get.trim.split(" ").head))),
        "startingOffsets" -> s"""{"$topic": {"0": 0}}"""
      )
      k.assertExact("windows and a key")
    }
  }

  private def indexFiles(name: String) = Files.list(Paths.get(storeDir(name), "index")).count()

  for (name <- Oracle.main if indexFiles(name) >= 2)
    test(s"$name: a deleted newest index file: lookups probe a side index built once, cached") {
      val copy = Files.createTempDirectory("rmqstore-planner-suite")
      try {
        copyTree(Paths.get(storeDir(name)), copy)
        Files.delete(Files.list(copy.resolve("index")).iterator.asScala.toSeq.sorted.last)
        val store = RmqStores.open(RmqOptions.parse(Map("path" -> copy.toString).asJava), copy.toString, null)
        val hole =
          try {
            val holes = store.indexHoles
            assert(holes.size == 1 && holes.head._2 == store.logEnd && holes.head._1 > store.minOffset, holes)
            holes.head
          } finally store.close()
        val keys = records(name).flatMap(r => Option(Oracle.text(r, "key"))).filter(_.trim.nonEmpty).distinct
        val inHole = records(name).filter { r =>
          val o = r.get("commitLogOffset").asLong
          hole._1 <= o && o < hole._2 && Oracle.text(r, "key") != null
        }
        assert(inHole.nonEmpty)
        val first = read(copy.toString, Seq(InSet("key", keys.toIndexedSeq)))
        first.assertExact("key IN, newest index file deleted")
        assert(first.access == "key-index" && first.notes.exists(_.contains("built a side index")), first.notes)
        val again = read(copy.toString, Seq(InSet("key", keys.toIndexedSeq)))
        again.assertExact("key IN, side index from the cache")
        assert(again.access == "key-index" && !again.notes.exists(_.contains("built a side index")), again.notes)
        assert(inHole.map(_.get("commitLogOffset").asLong).toSet.subsetOf(again.rows.toSet))
        val reopened = RmqStores.open(RmqOptions.parse(Map("path" -> copy.toString).asJava), copy.toString, null)
        try {
          reopened.indexLookup(reopened.topics, keys.map(_.trim.split(" ").head), reopened.lackingRanges)
          assert(reopened.lookupStats.bytesRead <= 8L * reopened.indexFiles.size, "the side index was not rescanned")
        } finally reopened.close()
      } finally
        Files.walk(copy).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
    }

  // a store the queues cover, like tests/conformance/test_conformance_spark.py's dense-topic test
  for (name <- Seq("rmq-5.5.0-broker")) test(s"$name: a topic plan whose records fill the log is a scan (DenseShare)") {
    val topics = records(name).map(_.get("topic").asText).distinct
    val every = read(storeDir(name), Seq(InSet("topic", topics.toIndexedSeq)))
    every.assertExact("every topic")
    assert(every.access == "scan" && every.notes.exists(_.contains("scanned instead of read by offset")), every.notes)
    assert(every.tasks.forall(_.isInstanceOf[RangeTask]), every.tasks)
    val rarest = topics.minBy(t => records(name).count(_.get("topic").asText == t))
    val rare = read(storeDir(name), Seq(Compare("topic", Predicate.Eq, rarest)))
    rare.assertExact(s"topic = $rarest")
    assert(rare.access == "queues", rare.notes)
  }

  test("a damaged index file falls back to the next path and says so") {
    val name = Oracle.main.head
    val copy = Files.createTempDirectory("rmqstore-planner-suite")
    try {
      copyTree(Paths.get(storeDir(name)), copy)
      val index = Files.list(copy.resolve("index")).iterator.asScala.toSeq.sorted.head
      val header = java.nio.channels.FileChannel.open(index, StandardOpenOption.WRITE)
      try header.write(java.nio.ByteBuffer.allocate(4).putInt(-1).flip(), 36L) // indexCount (§5.1) < 0
      finally header.close()
      val key = records(name).flatMap(r => Option(Oracle.text(r, "key"))).find(_.trim.nonEmpty).get
      val r = read(copy.toString, Seq(Compare("key", Predicate.Eq, key)))
      r.assertExact("damaged index")
      assert(r.access == "scan", r.notes)
      assert(r.notes.exists(_.contains("index cannot answer")), r.notes)
    } finally
      Files.walk(copy).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
  }

  test("an %LMQ% queue named by `topics` is read through its units whatever else bounds the read (§4.6)") {
    val path = storeDir("rmq-5.4.0-lmq")
    // record 1055 is TopicLmq/0 offset 2 and %LMQ%q1 offset 3: one row per queue unit read
    val both = read(path, Seq(Compare("commitLogOffset", Predicate.Eq, 1055L)), "topics" -> "TopicLmq,%LMQ%q1")
    assert(both.access == "queues" && both.rows == Seq(1055L, 1055L), both.notes)
    val groups = both.tasks.collect { case t: QueueSliceTask => t.slices.map(_.topic).distinct }
    assert(groups.sortBy(_.head) == Seq(Seq("%LMQ%q1"), Seq("TopicLmq")), both.tasks)
    // queueOffset compares the stored offset (5, 6, 6 here; q1 offsets 7, 8, 9): no clipping of q1's units
    val stored = read(path, Seq(Compare("queueOffset", Predicate.Ge, 5L)), "topics" -> "%LMQ%q1")
    assert(stored.rows.sorted == Seq(2719L, 3159L, 3559L), stored.notes)
  }

  private def copyTree(from: Path, to: Path): Unit =
    Files.walk(from).forEach { p =>
      val target = to.resolve(from.relativize(p).toString)
      if (Files.isDirectory(p)) Files.createDirectories(target) else Files.copy(p, target)
    }
}

/** One planned and executed read, and what a scan confirmed against the same predicates returns. */
private final case class Read(
    access: String,
    tasks: Seq[ReadTask],
    notes: Seq[String],
    rows: Seq[Long],
    expected: Seq[Long]
) {
  def assertExact(label: String): Unit = assert(rows.sorted == expected, s"$label: $access $notes")
}
