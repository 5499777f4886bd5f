package io.rmqstore.spark.store

import java.net.URI

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.io.{HadoopFileSystem, StoreFileSystem}

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
      for (ranges <- Seq(remote.splitRanges(1000)))
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
}
