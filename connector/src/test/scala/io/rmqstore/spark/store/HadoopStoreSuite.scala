package io.rmqstore.spark.store

import java.net.URI
import java.nio.ByteBuffer
import java.nio.file.{Files, Path, Paths}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.{ByteSource, IndexFile}
import io.rmqstore.spark.format.Encode.IndexBuilder
import io.rmqstore.spark.io.{CachedPages, CountingFileSystem, HadoopFileSystem, StoreFileSystem}
import io.rmqstore.spark.plan.Split

/** The Hadoop FileSystem path (ranged reads, no maps) reads a RocketMQ fixture like the local one. */
class HadoopStoreSuite extends AnyFunSuite {
  private val name = "rmq-5.5.0"

  test("locations: local paths and file:// are local, other schemes go through Hadoop") {
    assert(!StoreFileSystem.isUri("/a/b") && !StoreFileSystem.isUri("C://x") && StoreFileSystem.isUri("s3a://b/k"))
    assert(StoreFileSystem.resolve("file:///tmp/x", null)._2 == "/tmp/x")
  }

  test(s"$name through Hadoop's file system: same records, end, index answers and offsets") {
    val fs = new HadoopFileSystem(URI.create("file:///"), new Configuration())
    val root = Oracle.storeDir(name)
    val remote = Store.on(StoreLocation(root), fs, root, Some(Oracle.geometry(name)), None, checkCrcAtEnd = true)
    val local = Oracle.open(name)
    try {
      assert(remote.segments.map(_.baseOffset) == local.segments.map(_.baseOffset))
      assert(remote.logEnd == local.logEnd)
      def records(store: Store) = {
        val out = mutable.ArrayBuffer.empty[(Long, String, String, Seq[(String, String)])]
        val stats = store.scan(Long.MinValue, Long.MaxValue, verifyCrc = true, permissive = false) { v =>
          out += ((v.physicalOffset, v.topic, v.msgId, v.properties.asScala.toSeq))
        }
        (out.toSeq, stats)
      }
      val (got, stats) = records(remote)
      assert(got == records(local)._1 && got.map(_._1) == Oracle.records(name).map(_.get("commitLogOffset").asLong))
      assert(stats.bytesRead >= remote.logEnd)
      for (ranges <- Seq(Split.splitSpans(remote.segmentSpans, 1000)))
        assert(ranges.flatMap { case (a, b) =>
          val seen = mutable.ArrayBuffer.empty[Long]
          remote.scan(a, b, verifyCrc = false, permissive = false)(v => seen += v.physicalOffset)
          seen
        } == got.map(_._1))
      assert(remote.indexCandidates("TopicTest", "order-1").toSeq ==
        local.indexCandidates("TopicTest", "order-1").toSeq)
      assert(remote.consumerOffsets == local.consumerOffsets)
      assert(remote.topics == local.topics)
      val (lo, hi) = remote.queueRange("TopicTest", 0)
      assert(remote.queueUnits("TopicTest", 0, lo, hi).toSeq == local.queueUnits("TopicTest", 0, lo, hi).toSeq)
    } finally {
      remote.close()
      local.close()
    }
  }

  test("an index probe through Hadoop reads the header, one slot and its chain entries, never the file") {
    val dir = Files.createTempDirectory("rmq-remote-index")
    val root = Oracle.copyRelayingIndex(name, dir, IndexFile.DefaultHashSlots, IndexFile.DefaultIndexEntries)
    val indexDir = root.resolve("index").toString
    def indexBytes = CountingFileSystem.reads(indexDir).map(_.bytes.toLong).sum
    val remote = Store.open(StoreLocation(CountingFileSystem.uri(root.toString)), CountingFileSystem.conf, None)
    val local = Oracle.open(name)
    try {
      val files = remote.indexFiles
      assert(files.length == 7 && files.forall(f => f.problem.isEmpty && f.size == 420000040L))
      assert(files.forall(_.geometry.contains((IndexFile.DefaultHashSlots, IndexFile.DefaultIndexEntries))))
      val opened = indexBytes // header + geometry samples (64 entries, 64 slots and what they link to) per file
      assert(opened <= files.length * (400L << 10), s"opening the index read $opened bytes")
      val records = Oracle.records(name)
      val probes = records.flatMap { r =>
        val keys = Option(Oracle.text(r, "key")).toSeq.flatMap(_.split(" ")).filter(_.nonEmpty)
        (keys ++ Option(Oracle.text(r, "uniqKey"))).map(k => (Oracle.text(r, "topic"), k))
      }.distinct
      assert(probes.length > 100)
      val (topic, key) = ("TopicTest", "order-1")
      val before = indexBytes
      val one = remote.indexCandidates(topic, key)
      val probed = indexBytes - before
      assert(one.nonEmpty && one.toSeq == local.indexCandidates(topic, key).toSeq)
      assert(probed <= files.length * 2L * CachedPages.PageSize, s"one probe read $probed bytes")
      for ((t, k) <- probes) assert(remote.indexCandidates(t, k).toSeq == local.indexCandidates(t, k).toSeq, (t, k))
      val all = indexBytes
      assert(all <= files.length * (1L << 20), s"${probes.length} probes read $all bytes")
      info(f"index bytes read: opening ${files.length} files $opened%,d, one probe $probed%,d, " +
        f"${probes.length} probes $all%,d (the files hold ${files.map(_.size).sum}%,d)")
      def rows(store: Store) = {
        val found = store.indexLookup(Seq(topic), Seq(key), Nil)
        val out = mutable.ArrayBuffer.empty[(Long, String)]
        store.readAt(found, verifyCrc = true, permissive = false, strict = false) { v =>
          if (v.topic == topic && Option(v.keys).exists(_.contains(key))) out += ((v.physicalOffset, v.msgId))
        }
        out.toSeq
      }
      assert(rows(remote).nonEmpty && rows(remote) == rows(local))
    } finally {
      remote.close()
      local.close()
    }
  }

  test("finding a queue's ends through Hadoop reads its units, not the zeros pre-allocated after them") {
    val root = Oracle.copy(name, Files.createTempDirectory("rmq-remote-cq"))
    val queueFile = root.resolve("consumequeue/TopicTest/0/00000000000000000000")
    val used = Files.size(queueFile)
    val preallocated = 300000L * 20 // the broker's default mappedFileSizeConsumeQueue
    val out = java.nio.channels.FileChannel.open(queueFile, java.nio.file.StandardOpenOption.WRITE)
    try out.write(ByteBuffer.allocate(1), preallocated - 1)
    finally out.close()
    val remote = Store.open(StoreLocation(CountingFileSystem.uri(root.toString)), CountingFileSystem.conf, None)
    val local = Oracle.open(name)
    try {
      val range = remote.queueRange("TopicTest", 0)
      assert(range == local.queueRange("TopicTest", 0) && range._2 > 0)
      val read = CountingFileSystem.reads(queueFile.toString).map(_.bytes.toLong).sum
      assert(read <= ConsumeQueue.FirstWindowUnits * 20 + used, s"read $read of $preallocated bytes")
      info(f"queue ends: read $read%,d bytes of a $preallocated%,d-byte queue file holding $used%,d bytes of units")
    } finally {
      remote.close()
      local.close()
    }
  }

  test("coverage takes a queue's units from a commit-log offset by bisection, served from what its end search read") {
    val root = Oracle.copy(name, Files.createTempDirectory("rmq-remote-cq-from"))
    val queueFile = root.resolve("consumequeue/TopicTest/0/00000000000000000000").toString
    val remote = Store.open(StoreLocation(CountingFileSystem.uri(root.toString)), CountingFileSystem.conf, None)
    try {
      val queue = remote.queues.queue("TopicTest", 0)
      val every = queue.units(queue.minOffset, queue.maxOffset).toIndexedSeq
      assert(every.size > 4)
      val read = CountingFileSystem.reads(queueFile).size
      for (from <- 0L +: every.map(_.phyOffset) :+ (every.last.phyOffset + 1))
        assert(queue.unitsFrom(from) == every.filter(_.phyOffset >= from), s"from $from")
      assert(CountingFileSystem.reads(queueFile).size == read) // the last file's units are kept
    } finally remote.close()
  }
}
