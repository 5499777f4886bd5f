package io.rmqstore.spark.store

import java.nio.charset.StandardCharsets.UTF_8
import java.util.Base64

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.{Layout, MsgId, RecordView}

/** The format/io/store layers against stores written by real RocketMQ and RocketMQ's own answers. */
class ConformanceSuite extends AnyFunSuite {
  import Oracle._

  test("fixtures are present") {
    assert(main.size >= 4 && crash.size >= 2, s"fixtures: $main $crash")
  }

  for (name <- Oracle.main) {
    test(s"$name: every record matches MessageDecoder field by field") {
      val expected = records(name)
      val seen = mutable.ArrayBuffer.empty[Long]
      val spans = new Array[Int](1 << 16)
      val ascii = new Array[Byte](64)
      val store = open(name)
      try {
        val stats = store.scan(Long.MinValue, Long.MaxValue, verifyCrc = true, permissive = false) { v =>
          val i = seen.length
          assert(i < expected.length, s"more records than RocketMQ: ${v.physicalOffset}")
          val r = expected(i)
          val at = s"record at ${r.get("commitLogOffset").asLong}"
          seen += v.physicalOffset
          assert(v.physicalOffset == r.get("commitLogOffset").asLong, at)
          assert(v.topic == r.get("topic").asText, at)
          assert(v.magic == (if (r.get("magic").asInt == 2) Layout.MagicV2 else Layout.MagicV1), at)
          assert(v.queueId == r.get("queueId").asInt, at)
          assert(v.queueOffset == r.get("queueOffset").asLong, at)
          assert(v.totalSize == r.get("storeSize").asInt, at)
          assert(v.msgId == r.get("msgId").asText, at)
          assert(v.uniqKey == text(r, "uniqKey"), at)
          assert(v.key == text(r, "key"), at)
          val tokens = Option(text(r, "key")).map(_.split(" ").filter(_.nonEmpty).toSeq)
          assert(Option(v.keys).map(_.toSeq) == tokens, at)
          assert(v.tags == text(r, "tags"), at)
          assert(v.body(decompress = true).sameElements(Base64.getDecoder.decode(r.get("body").asText)), at)
          assert(v.bodyLength == r.get("storedBodyLength").asInt, at)
          assert(v.storedBody.length == r.get("storedBodyLength").asInt, at)
          assert(v.bodyCrc == r.get("bodyCrc").asInt, at)
          assert(v.flag == r.get("flag").asInt, at)
          assert(v.sysFlag == r.get("sysFlag").asInt, at)
          assert(v.bornTimestampMs == r.get("bornTimestamp").asLong, at)
          assert(v.storeTimestampMs == r.get("storeTimestamp").asLong, at)
          assert(host(v.bornHost) == host(r.get("bornHost").asText), at)
          assert(host(v.storeHost) == host(r.get("storeHost").asText), at)
          assert(v.reconsumeTimes == r.get("reconsumeTimes").asInt, at)
          assert(v.preparedTransactionOffset == r.get("preparedTransactionOffset").asLong, at)
          assert(v.properties.asScala.toMap == stringMap(r.get("properties")), at)
          // The byte-level accessors a columnar reader uses say the same.
          val n = v.propertyCount
          def span(i: Int, k: Int) =
            new String(v.propertyArray, v.propertySpans(4 * i + k), v.propertySpans(4 * i + k + 1), UTF_8)
          val bytes = (0 until n).map(i => span(i, 0) -> span(i, 2))
          assert(bytes.toMap == stringMap(r.get("properties")) && bytes.size == n, at)
          val spanFirst = new RecordView(v.buffer, v.position, v.physicalOffset)
          assert(spanFirst.propertyCount == n, at) // KEYS, TAGS, UNIQ_KEY then read from the spans
          assert((spanFirst.key, spanFirst.tags, spanFirst.uniqKey) == ((v.key, v.tags, v.uniqKey)), at)
          val k = v.keyTokenSpans(spans)
          assert(
            (if (k < 0) None
             else Some((0 until k).map(i =>
               new String(v.propertyArray, spans(2 * i), spans(2 * i + 1), UTF_8)
             ))) == tokens,
            at
          )
          assert(new String(ascii, 0, v.msgIdBytes(ascii, 0), UTF_8) == r.get("msgId").asText, at)
          assert(new String(ascii, 0, v.storeHostBytes(ascii, 0), UTF_8) == v.storeHost, at)
          assert(new String(ascii, 0, v.bornHostBytes(ascii, 0), UTF_8) == v.bornHost, at)
        }
        assert(seen.toSeq == expected.map(_.get("commitLogOffset").asLong))
        assert(stats.records == expected.length && stats.skippedRecords == 0)
      } finally store.close()
    }

    test(s"$name: log bounds match recovery, blanks end segments") {
      val oracle = all(name)
      val store = open(name)
      try {
        assert(store.minOffset == oracle.get("minPhyOffset").asLong)
        assert(store.logEnd == oracle.get("recoveredMaxPhyOffset").asLong)
        assert(store.logEnd == oracle.get("maxPhyOffset").asLong)
        val blanks = oracle.get("blanks").asScala.map(b => b.get("offset").asLong -> b.get("size").asInt)
        // DLedger blanks (§2.13) sit at entry positions; the next file's first record follows its entry header.
        val lead = if (oracle.path("dledger").asBoolean(false)) 48 else 0
        for ((offset, size) <- blanks) {
          val seg = Segments.find(store.segments, offset).get
          assert(offset + size == seg.endOffset, s"BLANK at $offset")
          assert(store.resync(offset) == seg.endOffset + lead, s"resync at the BLANK $offset")
        }
      } finally store.close()
    }

    test(s"$name: index candidates, confirmed, answer every key and uniqKey query like RocketMQ") {
      val store = open(name)
      try {
        assert(store.problems.isEmpty, store.problems)
        for (q <- all(name).get("queries").asScala) {
          val (kind, topic, key) = (q.get("kind").asText, q.get("topic").asText, q.get("key").asText)
          val label = s"$kind $topic#$key"
          val candidates = store.indexCandidates(topic, key)
          // queryMessage with the cap raised returns every hash candidate, collisions included.
          assert(candidates.toSet == longs(q.get("queryMessageAll")).toSet, label)
          val found = mutable.SortedSet.empty[Long]
          def confirm(v: io.rmqstore.spark.format.RecordView): Unit =
            if (v.topic == topic && (if (kind == "key") Option(v.keys).exists(_.contains(key)) else v.uniqKey == key))
              found += v.physicalOffset
          store.readAt(candidates, verifyCrc = false, permissive = true, strict = false)(confirm)
          store.scan(store.indexedEnd, store.logEnd, verifyCrc = false, permissive = true)(confirm)
          assert(found.toSeq == longs(q.get("matchesAll")).distinct.sorted, label)
          val answered = longs(q.get("queryMessage")).toSet & longs(q.get("matchesAll")).toSet
          if (q.get("capped").asBoolean) assert(answered.subsetOf(found), label)
          else assert(found == answered, label)
        }
        // the indexProbes metric: one slot lookup and chain walk per query per index file with entries
        val withEntries = store.indexFiles.count(_.header.exists(_.entryCount > 0))
        assert(withEntries > 0)
        assert(store.indexProbes == all(name).get("queries").size.toLong * withEntries)
        val before = store.indexProbes
        store.indexLookup(Seq("T1", "T2"), Seq("a", "b", "c"), Nil)
        assert(store.indexProbes - before == 6L * withEntries)
      } finally store.close()
    }

    test(s"$name: msgId lookups match lookMessageByOffset") {
      val store = open(name)
      try {
        for (q <- all(name).get("msgIdQueries").asScala) {
          val id = q.get("msgId").asText
          val expected = if (q.path("found").asBoolean(false)) Seq(q.get("offset").asLong) else Nil
          val found = MsgId.decode(id).toSeq.flatMap { case (host, offset) =>
            val hits = mutable.ArrayBuffer.empty[Long]
            store.readAt(Array(offset), verifyCrc = false, permissive = true, strict = false) { v =>
              if (v.storeHost == host) hits += v.physicalOffset
            }
            hits
          }
          assert(found == expected, id)
        }
      } finally store.close()
    }

    test(s"$name: queue ranges match getMin/MaxOffsetInQueue, units point at their records") {
      val store = open(name)
      try {
        for (q <- all(name).get("queues").asScala) {
          val (topic, qid) = (q.get("topic").asText, q.get("queueId").asInt)
          val range = (q.get("minOffset").asLong, q.get("maxOffset").asLong)
          // RocketMQ answers (0, 0) for a queue it never wrote (a topic of PREPARED / ROLLBACK records
          // only: no consume-queue file exists); the store has no such queue, which reads the same.
          if (range != ((0L, 0L)) || store.topics.contains(topic)) {
            assert(store.topics.contains(topic), topic)
            assert(store.queueIds(topic).contains(qid), s"$topic/$qid")
            assert(store.queueRange(topic, qid) == range, s"$topic/$qid")
          }
        }
        val byOffset = records(name).map(r => r.get("commitLogOffset").asLong -> r).toMap
        for (topic <- store.topics; qid <- store.queueIds(topic)) {
          val (lo, hi) = store.queueRange(topic, qid)
          val units = store.queueUnits(topic, qid, lo, hi).toSeq
          for ((queueOffset, phy, size, _) <- units) {
            val r = byOffset(phy)
            // an LMQ queue's unit points at a record of another topic that names it (docs/format.md §4.6)
            def listed(property: String) =
              Option(r.get("properties").get(property)).fold(Seq.empty[String])(_.asText.split(",").toSeq)
            val dispatchedHere = listed("INNER_MULTI_DISPATCH").indexOf(topic) match {
              case -1 => false
              case i => qid == 0 && listed("INNER_MULTI_QUEUE_OFFSET").lift(i).contains(queueOffset.toString)
            }
            val own = r.get("topic").asText == topic && r.get("queueId").asInt == qid
            assert(own || dispatchedHere, s"$topic/$qid@$queueOffset")
            assert(r.get("storeSize").asInt == size, s"$topic/$qid@$queueOffset")
          }
        }
      } finally store.close()
    }

    test(s"$name: consumer offsets match the broker's persisted ones") {
      val store = open(name)
      try assert(store.consumerOffsets == offsetTable(all(name).get("consumerOffsets")))
      finally store.close()
    }

    test(s"$name: index geometry is detected from the files") {
      val store = open(name, detect = true)
      try {
        assert(store.indexFiles.nonEmpty)
        for (info <- store.indexFiles) {
          assert(info.problem.isEmpty, info)
          assert(info.geometry.contains(geometry(name)), info)
        }
      } finally store.close()
    }
  }

  // Stores of RocksDBMessageStore (storeType=defaultRocksDB, §4.7-§4.8): RocketMQ's own units and backlogs.
  for (name <- Oracle.main if all(name).has("consumeQueueUnits")) {
    test(s"$name: RocksDB queue units and group backlogs match RocketMQ, store bytes unchanged") {
      val before = fileHashes(name)
      val store = open(name)
      try {
        for (q <- all(name).get("consumeQueueUnits").asScala) {
          val (topic, qid) = (q.get("topic").asText, q.get("queueId").asInt)
          val expected =
            q.get("units").asScala.map(u => (u.get(0).asLong, u.get(1).asLong, u.get(2).asInt, u.get(3).asLong))
          assert(store.queueUnits(topic, qid, 0L, Long.MaxValue).toSeq == expected.toSeq, s"$topic/$qid")
        }
        for (e <- all(name).get("backlog").fields.asScala) {
          val at = e.getKey.indexOf('@')
          val (topic, group) = (e.getKey.substring(0, at), e.getKey.substring(at + 1))
          val expected = e.getValue.fields.asScala.flatMap(_.getValue.asScala.map(_.asLong)).toSeq.sorted
          val got = store.groupOffsets(group)(topic).toSeq.flatMap { case (qid, offset) =>
            store.queueUnits(topic, qid, offset, Long.MaxValue).map(_._2)
          }
          assert(got.sorted == expected, e.getKey)
        }
      } finally store.close()
      assert(fileHashes(name) == before)
    }

    test(s"$name: the RocksDB in consumequeue_rocksdb/ (useSeparateStorePathForRocksdbCQ) reads the same") {
      val root = copy(name, java.nio.file.Files.createTempDirectory("rmq-rocksdb-separate"))
      java.nio.file.Files.move(root.resolve("consumequeue"), root.resolve("consumequeue_rocksdb"))
      val store = Store.open(StoreLocation(root.toString), null, Some(geometry(name)))
      try
        for (q <- all(name).get("queues").asScala)
          assert(
            store.queueRange(q.get("topic").asText, q.get("queueId").asInt) ==
              ((q.get("minOffset").asLong, q.get("maxOffset").asLong)),
            q
          )
      finally store.close()
    }

    test(s"$name: consumerOffset.json wins over the RocksDB offsets only with a higher dataVersion counter") {
      val root = copy(name, java.nio.file.Files.createTempDirectory("rmq-rocksdb-merge"))
      val rocks = open(name)
      val fromRocks =
        try rocks.consumerOffsets
        finally rocks.close()
      for ((counter, wins) <- Seq(0 -> false, 1 -> true)) {
        java.nio.file.Files.writeString(
          root.resolve("config").resolve("consumerOffset.json"),
          s"""{"offsetTable":{"TopicTest@group-a":{0:1}},"dataVersion":{"counter":$counter}}"""
        )
        val store = Store.open(StoreLocation(root.toString), null, Some(geometry(name)))
        try assert(store.consumerOffsets == (if (wins) Map(("TopicTest", "group-a") -> Map(0 -> 1L)) else fromRocks))
        finally store.close()
      }
    }
  }

  for (name <- Oracle.main if all(name).path("configManagerVersion").asText == "v2") {
    def offsets(field: String) = offsetTable(all(name).get(field))

    test(s"$name: consumer offsets come from the v2 config storage config/rdb/, never the older JSON") {
      val before = fileHashes(name)
      val store = open(name)
      try {
        assert(store.consumerOffsets == offsets("consumerOffsets"))
        assert(store.consumerOffsets != offsets("staleConsumerOffsets"))
        assert(store.groupOffsets("shape-group").keySet.exists(_.startsWith("%LMQ%")))
      } finally store.close()
      assert(fileHashes(name) == before)
    }

    test(s"$name: other config/rdb/ tables are skipped, a malformed offset record fails naming the key") {
      val root = copy(name, java.nio.file.Files.createTempDirectory("rmq-rdb"))
      val rdb = root.resolve("config").resolve("rdb").toString
      def put(key: Array[Byte]): Unit = {
        org.rocksdb.RocksDB.loadLibrary()
        val options = new org.rocksdb.Options().setAllowConcurrentMemtableWrite(false) // ConfigHelper's family
        val db = org.rocksdb.RocksDB.open(options, rdb)
        try db.put(key, new Array[Byte](8))
        finally { db.close(); options.close() }
      }
      def bytes(parts: Int*): Array[Byte] = parts.map(_.toByte).toArray
      put(bytes(1, 0, 2, 2, 0, 1, 'g', 1, 0, 1, 't', 1, 0, 0, 0, 0)) // a pull offset (table 2)
      val reopened = Store.open(StoreLocation(root.toString), null, Some(geometry(name)))
      try assert(reopened.consumerOffsets == offsets("consumerOffsets"))
      finally reopened.close()
      val shortQueueId = bytes(1, 0, 1, 2, 0, 1, 'g', 1, 0, 1, 't', 1, 0, 0)
      put(shortQueueId)
      val store = Store.open(StoreLocation(root.toString), null, Some(geometry(name)))
      try {
        val failure = intercept[StoreCorruptionException](store.consumerOffsets)
        assert(
          failure.getMessage == s"$rdb: at physical offset 0: consumer-offset record key " +
            s"${shortQueueId.map(b => f"$b%02x").mkString}: 2 bytes after the topic's separator, not a 4-byte queue id"
        )
      } finally store.close()
    }
  }

  for (name <- Oracle.crash) {
    test(s"$name: crash copy reads to RocketMQ's recovered end") {
      val oracle = all(name)
      val store = open(name)
      try {
        assert(store.logEnd == oracle.get("recoveredMaxPhyOffset").asLong)
        assert(store.logEnd == oracle.get("tornRecordOffset").asLong)
        val offsets = mutable.ArrayBuffer.empty[Long]
        store.scan(Long.MinValue, Long.MaxValue, verifyCrc = true, permissive = false)(v => offsets += v.physicalOffset)
        assert(offsets.toSeq == records(name).map(_.get("commitLogOffset").asLong))
      } finally store.close()
    }
  }
}
