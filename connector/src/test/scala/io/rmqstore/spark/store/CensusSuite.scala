package io.rmqstore.spark.store

import org.scalatest.funsuite.AnyFunSuite

/** `Census` against RocketMQ's records of the conformance fixtures (Oracle): the tallies per queue, from units and
  * the bytes no unit covers, are those of every record RocketMQ decodes (PREPARED / ROLLBACK ones included), on
  * every shape metadata aggregates answer (file and RocksDB queues, LMQ copies, DLedger) and crash copies.
  */
class CensusSuite extends AnyFunSuite {
  import Oracle._

  /** Its units hold batches (§4.5): `MetadataAggregates` refuses the shape. */
  private val BatchCq = "rmq-5.4.0-batchcq"

  test(s"$BatchCq has the shape metadata aggregates refuse") {
    val store = open(BatchCq)
    try assert(store.shape.get(Shape.BatchConsumeQueue).isDefined)
    finally store.close()
  }

  /** (count, min/max queue offset, min/max physical offset) per (topic, queueId) of `records`. */
  private def expected(records: Seq[com.fasterxml.jackson.databind.JsonNode]) =
    records.groupBy(r => (r.get("topic").asText, r.get("queueId").asInt)).map { case (k, rs) =>
      val qo = rs.map(_.get("queueOffset").asLong)
      val phy = rs.map(_.get("commitLogOffset").asLong)
      k -> (rs.size.toLong, qo.min, qo.max, phy.min, phy.max)
    }

  private def found(tallies: Map[(String, Int), Tally]) =
    tallies.map { case (k, t) => k -> (t.count, t.minQueueOffset, t.maxQueueOffset, t.minPhyOffset, t.maxPhyOffset) }

  for (name <- (Oracle.main ++ Oracle.crash).sorted if name != BatchCq) {
    test(s"$name: tallies per queue are RocketMQ's records, filtered alike") {
      val store = open(name)
      try {
        val all = IndexedSeq((store.minOffset, store.logEnd))
        val (tallies, stats) = store.census.tally((_, _, _, _) => true, all).get
        assert(found(tallies) == expected(records(name)))
        // PREPARED / ROLLBACK records (§4.1): in no queue
        val outside = records(name).filter(r => Set(4, 0xc)(r.get("sysFlag").asInt & 0xc))
        assert(stats.bytesRead >= outside.map(_.get("storeSize").asLong).sum) // read: what no unit points to
        val half = records(name)(records(name).size / 2).get("commitLogOffset").asLong
        val (some, _) = store.census.tally((_, _, qo, _) => qo >= 1, IndexedSeq((store.minOffset, half))).get
        assert(found(some) == expected(records(name).filter(r =>
          r.get("queueOffset").asLong >= 1 && r.get("commitLogOffset").asLong < half
        )))
      } finally store.close()
    }
  }

  test("whole tallies are kept while the log and every queue file are the same, counted again after a change") {
    val dir = java.nio.file.Files.createTempDirectory("census")
    val root = Oracle.copy("rmq-5.5.0", dir)
    def whole() = {
      val store = Store.open(StoreLocation(root.toString), null, Some(geometry("rmq-5.5.0")))
      try store.census.whole().get
      finally store.close()
    }
    val (first, read) = whole()
    assert(found(first) == expected(records("rmq-5.5.0")) && read.bytesRead > 0) // its PREPARED / ROLLBACK records
    val (again, none) = whole()
    assert(found(again) == found(first) && none.bytesRead == 0)
    val unitFile = java.nio.file.Files.walk(root.resolve("consumequeue")).filter(java.nio.file.Files.isRegularFile(_))
      .findFirst.get
    java.nio.file.Files.setLastModifiedTime(unitFile, java.nio.file.attribute.FileTime.fromMillis(1000L))
    val (recounted, reread) = whole()
    assert(found(recounted) == found(first) && reread.bytesRead == read.bytesRead)
  }

  test("whole tallies are kept on disk outside the store: a new JVM reads no unit, a changed store is counted again") {
    val dir = java.nio.file.Files.createTempDirectory("census-disk")
    val root = Oracle.copy("rmq-5.5.0", dir)
    def whole() = {
      Census.kept.clear() // as a new JVM
      val store = Store.open(StoreLocation(root.toString), null, Some(geometry("rmq-5.5.0")))
      try store.census.whole().get
      finally store.close()
    }
    val (first, read) = whole()
    val file = new CensusCache(CacheIdentity.local(root.toString, root.resolve("commitlog").toString)).path
    assert(java.nio.file.Files.exists(file) && !file.startsWith(root) && read.bytesRead > 0)
    val (again, none) = whole()
    assert(found(again) == found(first) && found(again) == expected(records("rmq-5.5.0")) && none.bytesRead == 0)
    val segment = java.nio.file.Files.list(root.resolve("commitlog")).findFirst.get
    java.nio.file.Files.setLastModifiedTime(segment, java.nio.file.attribute.FileTime.fromMillis(1000L))
    val (recounted, reread) = whole()
    assert(found(recounted) == found(first) && reread.bytesRead == read.bytesRead)
    java.nio.file.Files.write(file, "{\"version\": 1, \"key\": 0".getBytes) // torn: counted again
    assert(whole()._2.bytesRead == read.bytesRead)
  }
}
