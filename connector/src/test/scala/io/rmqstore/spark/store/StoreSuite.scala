package io.rmqstore.spark.store

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import scala.collection.mutable

import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.{Encode, IndexFile, RecordView}
import io.rmqstore.spark.io.{CountingFileSystem, VectoredCounting}
import io.rmqstore.spark.plan.{Compare, Predicate, RangeTask, ScanPlanner, Split}
import io.rmqstore.spark.format.Encode.{blank, properties, record}

/** Store behaviour on synthetic stores: valid end, damage in FAILFAST/PERMISSIVE, resync and range
  * splitting, offset reads, time seeks, windows over a segment being written, config files.
  */
class StoreSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val temporary = mutable.ArrayBuffer.empty[Path]

  private def tempDir(prefix: String): Path = {
    val dir = Files.createTempDirectory(prefix)
    temporary += dir
    dir
  }

  override def afterAll(): Unit =
    temporary.foreach { dir =>
      Files.walk(dir).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
    }

  /** Writes commit-log segments of `segSize` bytes holding `count` records (BLANK-ended like a broker),
    * store times `storeTs(i)` (by default 1000 ms apart) into `root`; returns (store root, record offsets).
    */
  private def writeStore(
      count: Int,
      segSize: Int,
      bodySize: Int = 100,
      pad: Boolean = true,
      storeTs: Int => Long = i => 1700000000000L + 1000L * i,
      root: Path = tempDir("rmqstore-store-suite")
  ): (Path, Seq[Long]) = {
    val dir = Files.createDirectories(root.resolve("commitlog"))
    val offsets = mutable.ArrayBuffer.empty[Long]
    var segBase = 0L
    var seg = ByteBuffer.allocate(segSize)
    def flush(): Unit = {
      val bytes = if (pad) seg.array else seg.array.take(seg.position())
      Files.write(dir.resolve(f"$segBase%020d"), bytes)
    }
    for (i <- 0 until count) {
      def rec(phy: Long) = record(
        body = Array.fill[Byte](bodySize)(i.toByte),
        phy = phy,
        queueOffset = i,
        props = properties("KEYS" -> s"k$i", "TAGS" -> "t"),
        storeTs = storeTs(i)
      )
      if (rec(0).length + 8 > seg.remaining) {
        seg.put(blank(seg.remaining))
        flush()
        segBase += segSize
        seg = ByteBuffer.allocate(segSize)
      }
      val r = rec(segBase + seg.position())
      offsets += segBase + seg.position()
      seg.put(r)
    }
    flush()
    (root, offsets.toSeq)
  }

  private def open(root: Path, end: Option[Long] = None) = Store.open(StoreLocation(root.toString), null, None, end)

  private def all(store: Store, permissive: Boolean = false): (Seq[Long], ScanStats) = {
    val seen = mutable.ArrayBuffer.empty[Long]
    val stats = store.scan(Long.MinValue, Long.MaxValue, verifyCrc = false, permissive)(v => seen += v.physicalOffset)
    (seen.toSeq, stats)
  }

  private def corrupt(root: Path, offset: Long, segSize: Int, bytes: Array[Byte]): Path = {
    val path = root.resolve("commitlog").resolve(f"${offset / segSize * segSize}%020d")
    val data = Files.readAllBytes(path)
    System.arraycopy(bytes, 0, data, (offset % segSize).toInt, bytes.length)
    Files.write(path, data)
    path
  }

  test("scan reads every record across BLANK-ended segments; a pre-allocated segment does not move the end") {
    val (root, offsets) = writeStore(60, 4096)
    val last = offsets.last / 4096 * 4096
    Files.write(root.resolve("commitlog").resolve(f"${last + 4096}%020d"), new Array[Byte](4096))
    val store = open(root)
    try {
      assert(all(store)._1 == offsets)
      val lastSize = record(body = new Array[Byte](100), props = properties("KEYS" -> "k59", "TAGS" -> "t")).length
      assert(store.logEnd == offsets.last + lastSize)
      assert(store.logEndReason.contains("first invalid record at position"))
    } finally store.close()
  }

  test(
    "opening a store again resumes the walk for the valid end: appended records are found, changed files re-walked"
  ) {
    val (root, offsets) = writeStore(20, 1 << 16) // one pre-allocated segment, zeros after the records
    val segment = root.resolve("commitlog").resolve(f"${0}%020d")
    val size = record(body = new Array[Byte](100), props = properties("KEYS" -> "k19", "TAGS" -> "t")).length
    val firstEnd = offsets.last + size
    def walked() = {
      val s = open(root);
      try ((s.logEnd, s.logEndReason))
      finally s.close()
    }
    def end() = walked()._1
    assert(end() == firstEnd)
    assert(end() == firstEnd) // resumed at the remembered end
    // the broker appends into the pre-allocated zeros; the file may keep its size and modified time
    val modified = Files.getLastModifiedTime(segment)
    val appended = record(body = new Array[Byte](100), phy = firstEnd, props = properties("KEYS" -> "k20"))
    val channel = java.nio.channels.FileChannel.open(segment, java.nio.file.StandardOpenOption.WRITE)
    try channel.write(ByteBuffer.wrap(appended), firstEnd)
    finally channel.close()
    Files.setLastModifiedTime(segment, modified)
    assert(end() == firstEnd + appended.length)
    // a file changed in place (a new modified time) is walked from its start again, to the damage; the valid
    // records after it make it damage, not the end (docs/damage.md §2)
    corrupt(root, offsets(3) + 100, 1 << 16, new Array[Byte](20))
    val (again, reason) = walked()
    assert(again == firstEnd + appended.length && reason.contains(s"first invalid record at position ${offsets(3)}"))
  }

  test("a torn last record ends the log (not an error); a damaged older segment is FAILFAST / PERMISSIVE") {
    val (root, offsets) = writeStore(60, 4096)
    corrupt(root, offsets.last + 100, 4096, new Array[Byte](20)) // torn tail: its body is zeroed (CRC)
    val bad = offsets(5)
    val path = corrupt(root, bad, 4096, Array[Byte](0, 0, 0, 7))
    val store = open(root)
    try {
      assert(store.logEnd == offsets.last)
      val e = intercept[StoreCorruptionException](all(store))
      assert(e.file == path.toString && e.offset == bad)
      assert(e.getMessage == s"$path: at physical offset $bad: invalid record: " +
        s"BODYLENGTH 100 at position ${bad + 84} exceeds TOTALSIZE 7")
      val (seen, stats) = all(store, permissive = true) // steps over exactly the damaged record
      assert(seen == offsets.filter(o => o != bad && o < offsets.last))
      assert(stats.skippedRecords == 1 && stats.skippedBytes == offsets(6) - bad)
      assert(stats.firstSkipped == s"$path: at physical offset $bad: invalid record (BODYLENGTH 100 at position " +
        s"${bad + 84} exceeds TOTALSIZE 7); ${offsets(6) - bad} bytes skipped")
    } finally store.close()
  }

  test("older records past the end are a restarted broker's leftovers, not damage: the end stays (damage.md §2)") {
    val (old, oldOffsets) = writeStore(30, 8192)
    val (root, offsets) = writeStore(10, 8192, bodySize = 137, storeTs = i => 1800000000000L + i)
    val end =
      offsets.last + record(body = new Array[Byte](137), props = properties("KEYS" -> "k9", "TAGS" -> "t")).length
    val oldEnd = oldOffsets.last + recordSize(29)
    assert(!oldOffsets.contains(end) && end < oldEnd)
    val leftover = Files.readAllBytes(old.resolve("commitlog").resolve(f"${0}%020d")).slice(end.toInt, oldEnd.toInt)
    corrupt(root, end, 8192, leftover) // what the broker restarted after a crash did not write over
    val store = open(root)
    try {
      assert(store.logEnd == end)
      assert(all(store)._1 == offsets)
    } finally store.close()
  }

  /** An index file `name` in `root`/index holding the entries the broker writes for the records at `offsets`
    * (KEYS k<i> of `writeStore`): its header's endPhyOffset is the last one.
    */
  private def writeIndex(root: Path, offsets: Seq[Long], name: String = "20240101000000000"): Unit = {
    val index = new Encode.IndexBuilder(64, 8192)
    for ((offset, i) <- offsets.zipWithIndex)
      index.put(IndexFile.indexKey("TopicTest", s"k$i"), offset, 1700000000000L + 1000L * i)
    Files.write(Files.createDirectories(root.resolve("index")).resolve(name), index.bytes)
  }

  private def recordSize(i: Int): Long =
    record(body = new Array[Byte](100), props = properties("KEYS" -> s"k$i", "TAGS" -> "t")).length

  test("the walk for the valid end starts at the newest index file's endPhyOffset: it reads what follows") {
    val (count, segSize, indexed) = (4000, 2 << 20, 3990)
    val (root, offsets) = writeStore(count, segSize) // one pre-allocated segment, zeros after the records
    writeIndex(root, offsets.take(indexed + 1))
    val (bare, _) = writeStore(count, segSize) // the same records, no index
    val end = offsets.last + recordSize(count - 1)
    def walked(dir: Path): Long = {
      val segment = dir.resolve("commitlog").resolve(f"${0}%020d").toString
      val before = CountingFileSystem.reads(segment).map(_.bytes.toLong).sum
      val store = Store.open(StoreLocation(CountingFileSystem.uri(dir.toString)), CountingFileSystem.conf, None)
      try assert(store.logEnd == end)
      finally store.close()
      CountingFileSystem.reads(segment).map(_.bytes.toLong).sum - before
    }
    val fromIndex = walked(root)
    val fromStart = walked(bare)
    // the first record's check, the record at E's, then [E, end) and the zeros after it in windows growing
    // x4 from ResumeWindow
    val after = end - offsets(indexed)
    val bound = 2L * CommitLog.ProbeBytes + CommitLog.ResumeWindow + 5 * after
    assert(fromIndex <= bound, s"the walk from E read $fromIndex bytes ($after after E)")
    assert(fromStart >= end, s"the walk from 0 read $fromStart bytes")
    info(f"valid-end walk: $fromIndex%,d bytes from E, $fromStart%,d from 0 ($end%,d bytes of records)")
  }

  test("a walk from E: damage before E in the active segment is FAILFAST / PERMISSIVE, not the end") {
    val (root, offsets) = writeStore(60, 1 << 16)
    val (bare, _) = writeStore(60, 1 << 16)
    val bad = offsets(5)
    for (dir <- Seq(root, bare)) corrupt(dir, bad, 1 << 16, Array[Byte](0, 0, 0, 7))
    writeIndex(root, offsets.take(51))
    val store = open(root)
    try {
      assert(store.logEnd == offsets.last + recordSize(59))
      val e = intercept[StoreCorruptionException](all(store))
      assert(e.file == root.resolve("commitlog").resolve(f"${0}%020d").toString && e.offset == bad)
      assert(e.reason == s"invalid record: BODYLENGTH 100 at position ${bad + 84} exceeds TOTALSIZE 7")
      val (seen, stats) = all(store, permissive = true)
      assert(seen == offsets.filter(_ != bad))
      assert(stats.skippedRecords == 1 && stats.skippedBytes == offsets(6) - bad)
    } finally store.close()
    val walkedFromStart = open(bare) // no index: the walk from 0 stops at the damage, which the records after it
    try { //                            make damage, not the end (docs/damage.md §2)
      assert(walkedFromStart.logEnd == offsets.last + recordSize(59))
      assert(walkedFromStart.logEndReason.contains(s"first invalid record at position $bad"))
      assert(intercept[StoreCorruptionException](all(walkedFromStart)).offset == bad)
    } finally walkedFromStart.close()
  }

  test("the walk starts at 0 when the record at E is invalid or E is not in the segment holding the end") {

    /** Where the walk for the valid end of a store of 60 records in `segSize`-byte segments whose records
      * `damaged` have a bad BODYCRC, indexed up to (E =) `indexedEnd` of the record offsets, stopped (its
      * position in its segment: the valid records after it make it damage, docs/damage.md §2, and the valid
      * end the log's last byte), and those offsets.
      */
    def stop(segSize: Int, damaged: Seq[Int], indexedEnd: Seq[Long] => Long): (Long, Seq[Long]) = {
      val (root, offsets) = writeStore(60, segSize)
      damaged.foreach(i => corrupt(root, offsets(i) + 120, segSize, Array[Byte](42)))
      writeIndex(root, offsets.takeWhile(_ < indexedEnd(offsets)) :+ indexedEnd(offsets))
      val store = open(root)
      try {
        assert(store.logEnd == offsets.last + recordSize(59))
        val at = "first invalid record at position (\\d+)".r.findFirstMatchIn(store.logEndReason)
        (at.fold(-1L)(_.group(1).toLong), offsets)
      } finally store.close()
    }
    val (atE, offsets) = stop(1 << 16, Seq(5, 50), _(50)) // the record at E fails the check (BODYCRC)
    assert(atE == offsets(5))
    val (lost, lostOffsets) = stop(1 << 16, Seq(5), o => o.last + 3 * recordSize(59)) // E in zeros: pages lost
    assert(lost == lostOffsets(5))
    val (older, olderOffsets) = stop(8192, Seq(50), _(10)) // E in an older segment than the end's
    assert(olderOffsets(10) < 8192 && olderOffsets(50) > 8192 && older == olderOffsets(50) % 8192)
  }

  test("a record below the 91-byte minimum is invalid for the walk (PHYSICALOFFSET and lengths consistent)") {
    val (root, offsets) = writeStore(10, 4096)
    val tiny = record(body = Array.emptyByteArray, props = Array.emptyByteArray, topic = "", phy = offsets(4))
    java.nio.ByteBuffer.wrap(tiny).putInt(0, 90).putInt(84, -1)
    corrupt(root, offsets(4), 4096, tiny)
    val store = open(root)
    try { // the valid records after it make it damage, not the end (docs/damage.md §2)
      assert(store.logEnd == offsets(9) + recordSize(9))
      assert(store.logEndReason.contains(s"fails the structural checks (TOTALSIZE 90); without an abort file"))
    } finally store.close()
  }

  test("verifyCrc finds a damaged body; PERMISSIVE counts it as a CRC failure") {
    val (root, offsets) = writeStore(30, 4096)
    corrupt(root, offsets(3) + 120, 4096, Array[Byte](42))
    val store = open(root)
    try {
      assert(all(store)._1 == offsets) // no CRC check: the record is structurally fine
      val e =
        intercept[StoreCorruptionException](store.scan(0, Long.MaxValue, verifyCrc = true, permissive = false)(_ => ()))
      assert(
        e.offset == offsets(3) && e.reason.startsWith(s"invalid record: BODYCRC mismatch at position ${offsets(3)}")
      )
      val stats = store.scan(0, Long.MaxValue, verifyCrc = true, permissive = true)(_ => ())
      assert(stats.crcFailures == 1 && stats.skippedRecords == 1 && stats.records == 29)
    } finally store.close()
  }

  test("damage at a range boundary is reported once, by the range whose last record ends at it") {
    val (root, offsets) = writeStore(40, 8192)
    val bad = offsets(10)
    corrupt(root, bad, 8192, Array[Byte](0, 0, 0, 7))
    val store = open(root)
    try {
      for (cut <- Seq(bad, bad - 1, bad + 1, offsets(9) + 1)) {
        val seen = mutable.ArrayBuffer.empty[Long]
        val stats = Seq((0L, cut), (cut, store.logEnd)).map { case (a, b) =>
          store.scan(a, b, verifyCrc = false, permissive = true)(v => seen += v.physicalOffset)
        }
        assert(seen.toSeq == offsets.filter(_ != bad), cut)
        assert(stats.map(_.skippedRecords).sum == 1 && stats.map(_.skippedBytes).sum == offsets(11) - bad, cut)
        val failing = Seq((0L, cut), (cut, store.logEnd)).count { case (a, b) =>
          try { store.scan(a, b, verifyCrc = false, permissive = false)(_ => ()); false }
          catch { case e: StoreCorruptionException => assert(e.offset == bad); true }
        }
        assert(failing == 1, cut)
      }
    } finally store.close()
  }

  test("a body that cannot be decompressed: FAILFAST names file and offset, PERMISSIVE leaves the record out") {
    val (root, offsets) = writeStore(3, 4096)
    val dir = root.resolve("commitlog")
    val junk = record(
      body = Array[Byte](1, 2, 3, 4),
      sysFlag = 0x201,
      phy = offsets(1),
      queueOffset = 1,
      props = properties("KEYS" -> "k1", "TAGS" -> "t"),
      storeTs = 1700000001000L
    )
    val size = offsets(2) - offsets(1)
    assert(junk.length < size)
    val path = corrupt(root, offsets(1), 4096, junk ++ Array.fill[Byte]((size - junk.length).toInt)(0))
    // re-point the record sizes: rewrite the log as record 0, junk, record 2 moved down
    val data = Files.readAllBytes(path)
    val r2 = data.slice(offsets(2).toInt, offsets(2).toInt + (offsets(2) - offsets(1)).toInt)
    java.nio.ByteBuffer.wrap(r2).putLong(28, offsets(1) + junk.length)
    System.arraycopy(r2, 0, data, (offsets(1) + junk.length).toInt, r2.length)
    Files.write(path, data)
    val store = open(root)
    try {
      val e = intercept[StoreCorruptionException](store.scan(0, Long.MaxValue, verifyCrc = true, permissive = false) {
        v => v.body(decompress = true)
      })
      assert(e.file == dir.resolve(f"${0}%020d").toString && e.offset == offsets(1))
      assert(e.reason.startsWith("cannot decompress body (compression type 2): "))
      val seen = mutable.ArrayBuffer.empty[Long]
      val stats = store.scan(0, Long.MaxValue, verifyCrc = true, permissive = true) { v =>
        v.body(decompress = true)
        seen += v.physicalOffset
      }
      assert(seen.toSeq == Seq(0L, offsets(1) + junk.length))
      assert(stats.records == 2 && stats.skippedRecords == 1 && stats.skippedBytes == junk.length)
      val read = store.readAt(Array(offsets(1)), verifyCrc = false, permissive = true)(v => v.body(decompress = true))
      assert(read.records == 0 && read.skippedRecords == 1)
    } finally store.close()
    val capped = Store.open(StoreLocation(root.toString), null, None, maxMessageSize = 1)
    try {
      val big = mutable.ArrayBuffer.empty[Int]
      capped.scan(0, Long.MaxValue, verifyCrc = false, permissive = true)(v => big += v.body(decompress = true).length)
      assert(big.toSeq == Seq(100, 100)) // uncompressed bodies are not capped
    } finally capped.close()
    assert(intercept[IllegalArgumentException](Store.open(StoreLocation(root.toString), null, None, maxMessageSize = 0))
      .getMessage == "maxMessageSize must be positive, got 0")
  }

  test("segment spans split into tasks tile the log: scanning each range yields every record exactly once") {
    val (root, offsets) = writeStore(200, 8192)
    val store = open(root)
    try {
      for (maxBytes <- Seq(1L, 97L, 1000L, 5000L, 1L << 30)) {
        val ranges = Split.splitSpans(store.segmentSpans, maxBytes)
        assert(ranges.head._1 == 0 && ranges.last._2 == store.logEnd)
        assert(ranges.forall { case (a, b) =>
          b - a <= maxBytes && Segments.find(store.segments, a) == Segments.find(store.segments, b - 1)
        })
        val seen = ranges.flatMap { case (a, b) =>
          val got = mutable.ArrayBuffer.empty[Long]
          store.scan(a, b, verifyCrc = false, permissive = false)(v => got += v.physicalOffset)
          got
        }
        assert(seen == offsets, maxBytes)
      }
      assert(intercept[IllegalArgumentException](Split.splitSpans(store.segmentSpans, 0)).getMessage ==
        "max_size must be positive, got 0")
    } finally store.close()
  }

  test(
    "scanRanges: the records of scan over each range; a segment's small ranges in one vectored read (Hadoop 3.3.5+)"
  ) {
    val (root, offsets) = writeStore(120, 1 << 16)
    val bad = offsets(50)
    corrupt(root, bad, 1 << 16, Array[Byte](0, 0, 0, 7))
    writeIndex(root, offsets.take(100)) // the walk for the end starts after the damage
    val store = Store.open(StoreLocation(CountingFileSystem.uri(root.toString)), CountingFileSystem.conf, None)
    try {
      assert(store.logEnd == offsets.last + recordSize(119))
      def records(ranges: Seq[(Long, Long)])(
          read: (Seq[(Long, Long)], RecordView => Unit) => ScanStats
      ) = {
        val seen = mutable.ArrayBuffer.empty[Long]
        val stats = read(ranges, v => seen += v.physicalOffset)
        (seen.toSeq, stats.skippedRecords)
      }
      def each(ranges: Seq[(Long, Long)], f: RecordView => Unit) =
        ranges.map { case (a, b) => store.scan(a, b, verifyCrc = false, permissive = true)(f) }.reduce(_ add _)
      def gathered(ranges: Seq[(Long, Long)], f: RecordView => Unit) =
        store.scanRanges(ranges, verifyCrc = false, permissive = true)(f)
      // record-aligned ranges, one starting inside a record, one holding the damage
      val ranges = Seq((offsets(2), offsets(5)), (offsets(9) + 7, offsets(12)), (offsets(49), offsets(52)))
      assert(records(ranges)(gathered) == records(ranges)(each))
      assert(records(ranges)(gathered)._2 == 1)
      val failing =
        intercept[StoreCorruptionException](store.scanRanges(ranges, verifyCrc = false, permissive = false)(_ => ()))
      assert(failing.offset == bad)
      val segment = root.resolve("commitlog").resolve(f"${0}%020d").toString
      val clean = (10 until 40 by 3).map(i => (offsets(i), offsets(i + 1)))
      val (batches, bytes) = (CountingFileSystem.batches(segment).length, CountingFileSystem.reads(segment).length)
      assert(records(clean)(gathered)._1 == clean.map(_._1))
      assert(CountingFileSystem.batches(segment).drop(batches) == VectoredCounting.batches(clean.length))
      assert(CountingFileSystem.reads(segment).drop(bytes).map(_.bytes.toLong).sum == clean.map(r => r._2 - r._1).sum)
    } finally store.close()
  }

  test("resync: the next record start at or after any byte") {
    val (root, offsets) = writeStore(40, 4096)
    val store = open(root)
    try {
      for (o <- offsets) {
        assert(store.resync(o) == o)
        val next = offsets.find(_ > o + 1).getOrElse(store.logEnd)
        assert(store.resync(o + 1) == next, o)
      }
      assert(store.resync(store.logEnd) == store.logEnd)
    } finally store.close()
  }

  test("readAt: records at given offsets; a non-record offset is corruption unless not strict") {
    val (root, offsets) = writeStore(40, 4096)
    val store = open(root)
    try {
      val wanted = Array(offsets(7), offsets(3), offsets(30), offsets(3), -1L, 1L << 40)
      val got = mutable.ArrayBuffer.empty[(Long, Long)]
      val stats =
        store.readAt(wanted, verifyCrc = true, permissive = false)(v => got += ((v.physicalOffset, v.queueOffset)))
      assert(got.toSeq == Seq(3, 7, 30).map(i => (offsets(i), i.toLong)) && stats.records == 3)
      val inside = offsets(3) + 1
      val e =
        intercept[StoreCorruptionException](store.readAt(Array(inside), verifyCrc = false, permissive = false)(_ => ()))
      assert(e.offset == inside && e.reason.startsWith("no valid record: "))
      assert(store.readAt(Array(inside), verifyCrc = false, permissive = true)(_ => ()).skippedRecords == 1)
      assert(store.readAt(Array(inside), verifyCrc = false, permissive = false, strict = false)(_ => ()).records == 0)
    } finally store.close()
  }

  test("readAt through Hadoop: a segment's scattered runs are first read as one vectored read (Hadoop 3.3.5+)") {
    val (root, offsets) = writeStore(120, 1 << 20, bodySize = 8000)
    val wanted = offsets.indices.filter(_ % 10 == 0).map(offsets).filter(_ < (1 << 20)).toArray // 80 KB apart
    val store = Store.open(StoreLocation(CountingFileSystem.uri(root.toString)), CountingFileSystem.conf, None)
    try {
      val got = mutable.ArrayBuffer.empty[Long]
      val segment = root.resolve("commitlog").resolve(f"${0}%020d").toString
      val before = CountingFileSystem.batches(segment).length
      store.readAt(wanted, verifyCrc = true, permissive = false)(v => got += v.physicalOffset)
      assert(wanted.length > 5 && got.toSeq == wanted.toSeq)
      assert(CountingFileSystem.batches(segment).drop(before) == VectoredCounting.batches(wanted.length))
    } finally store.close()
  }

  test("seekTime: the first record at or after a time") {
    val (root, offsets) = writeStore(300, 8192)
    val store = open(root)
    try {
      assert(store.seekTime(0) == 0)
      for (i <- Seq(0, 1, 17, 150, 299)) {
        assert(store.seekTime(1700000000000L + 1000L * i) == offsets(i), i)
        assert(store.seekTime(1700000000000L + 1000L * i - 999) == offsets(i), i)
      }
      assert(store.seekTime(1700000000000L + 1000L * 300) == store.logEnd)
    } finally store.close()
  }

  /** (offset, store time) of every record, by a scan. */
  private def timed(store: Store): Seq[(Long, Long)] = {
    val out = mutable.ArrayBuffer.empty[(Long, Long)]
    store.scan(Long.MinValue, Long.MaxValue, verifyCrc = false, permissive = false) { v =>
      out += ((v.physicalOffset, v.storeTimestampMs))
    }
    out.toSeq
  }

  /** The records a scan of `ranges` yields, each range once; the ranges are sorted and disjoint. */
  private def inRanges(store: Store, ranges: Seq[(Long, Long)]): Seq[Long] = {
    assert(ranges.zip(ranges.drop(1)).forall { case ((a, b), (c, _)) => a < b && b <= c }, ranges)
    ranges.flatMap { case (a, b) =>
      val got = mutable.ArrayBuffer.empty[Long]
      store.scan(a, b, verifyCrc = false, permissive = false)(v => got += v.physicalOffset)
      got
    }
  }

  /** seekTime at and around every record's time, and timeRanges over windows between sampled times, against
    * brute force; ranges are exact except in unordered runs, which are taken whole.
    */
  private def checkTimes(store: Store): Unit = {
    val records = timed(store)
    val unordered = store.timeRuns.filter(!_.ordered)
    val times = records.map(_._2)
    for (t <- (times.flatMap(t => Seq(t - 1, t, t + 1)) ++ Seq(Long.MinValue, Long.MaxValue)).distinct) {
      val wanted = records.find(_._2 >= t).fold(store.logEnd)(_._1)
      assert(store.seekTime(t) == wanted, s"seekTime($t)")
    }
    val samples = (times.indices.by(23).map(times) ++ Seq(times.min - 1, times.max + 1)).flatMap(t => Seq(t, t + 1))
    for (a <- samples; b <- samples if a <= b) {
      val wanted = records.filter { case (_, t) => a <= t && t <= b }.map(_._1)
      val got = inRanges(store, store.timeRanges(a, b))
      val extra = got.diff(wanted)
      assert(wanted.diff(got).isEmpty && extra.forall(o => unordered.exists(r => r.start <= o && o < r.end)), (a, b))
    }
    assert(store.timeRanges(Long.MinValue, Long.MaxValue) == Seq((store.minOffset, store.logEnd)))
    assert(store.timeRanges(Long.MinValue, times.min - 1).isEmpty)
    assert(store.timeRanges(times.max + 1, Long.MaxValue).isEmpty)
  }

  test("seekTime and timeRanges are exact when the clock steps back by hours, in an older and in the last segment") {
    val base = 1700000000000L
    val hours = 3600L * 1000
    def storeTs(i: Int): Long =
      base + 1000L * (i / 3) - (if (i >= 100 && i < 130) 3 * hours else 0) - (if (i >= 597) 2 * hours else 0)
    val (root, offsets) = writeStore(600, 8192, storeTs = storeTs)
    val store = open(root)
    try {
      val segs = store.segments.count(_.baseOffset < store.logEnd)
      assert(segs > 10 && store.timeRuns.forall(_.ordered))
      assert(store.timeRuns.length == segs + 2) // the older step back breaks two runs, the last one one
      assert(Segments.find(store.segments, offsets(597)).get == store.segments(segs - 1))
      // A window on the stepped-back hours: two stretches, neither where the old 5 s margin looked.
      assert(inRanges(store, store.timeRanges(base - 3 * hours, base - hours)) ==
        offsets.indices.filter(i => storeTs(i) <= base - hours).map(offsets))
      assert(store.seekTime(base + 40000) == offsets(130)) // 120 to 129 (times from base + 40 s) stepped back
      // Planned: a range task set per run, intersected with the offset bounds, split by maxBytesPerPartition.
      val window = Seq(
        Compare("storeTimestamp", Predicate.Ge, (base - 3 * hours) * 1000),
        Compare("storeTimestamp", Predicate.Le, (base - hours) * 1000),
        Compare("commitLogOffset", Predicate.Le, offsets(597))
      )
      val plan = ScanPlanner.plan(IndexedSeq(store), IndexedSeq(window), ScanPlanner.Settings(4096, None, 64))
      val tasks = plan.tasks.collect { case RangeTask(0, a, b) => (a, b) }
      assert(plan.access == Seq("range") && tasks.length == plan.tasks.length && tasks.forall(t => t._2 - t._1 <= 4096))
      assert(inRanges(store, tasks) == ((100 until 130) :+ 597).map(offsets))
      checkTimes(store)
    } finally store.close()
  }

  test("a segment with more than 256 runs (a jittering clock) is one unordered run, walked and taken whole") {
    val base = 1700000000000L
    val (root, _) = writeStore(700, 1 << 16, bodySize = 20, storeTs = i => base + (if (i < 400) -1000L * i else 0L))
    val store = open(root)
    try {
      val first = timed(store).filter(r => store.segments.head.contains(r._1)).map(_._2)
      val head = store.timeRuns.head
      assert(first.length > 300 && head.start == 0 && !head.ordered)
      assert(head.firstMs == first.min && head.lastMs == first.max)
      assert(store.timeRuns.tail.nonEmpty && store.timeRuns.tail.forall(_.ordered))
      checkTimes(store)
    } finally store.close()
  }

  test("time summaries are cached per segment identity: a segment rewritten with other times is walked again") {
    val (root, _) = writeStore(100, 8192)
    val first = open(root)
    val before =
      try first.timeRuns
      finally first.close()
    assert(before.forall(_.ordered))
    val segments = Files.list(root.resolve("commitlog")).toArray.map(_.asInstanceOf[Path])
    val modified = segments.map(Files.getLastModifiedTime(_).toMillis)
    writeStore(100, 8192, storeTs = i => 1700000000000L - 1000L * i, root = root) // same names and sizes
    for ((segment, ms) <- segments.zip(modified))
      Files.setLastModifiedTime(segment, java.nio.file.attribute.FileTime.fromMillis(ms + 5000))
    val second = open(root)
    try {
      assert(before.length == 3 && second.timeRuns.length == 100) // every record its own run now
      checkTimes(second)
    } finally second.close()
  }

  test("a segment still being written is read in windows; records cut by window edges come out whole") {
    val (root, offsets) = writeStore(10000, 1 << 24, bodySize = 1500, pad = false) // one 16 MB active segment
    val store = open(root)
    try {
      assert(store.segments.size == 1 && store.logEnd == Files.size(root.resolve("commitlog").resolve(f"${0}%020d")))
      val (seen, stats) = all(store)
      assert(seen == offsets && stats.bytesRead >= store.logEnd)
      val mid = Split.splitSpans(store.segmentSpans, 5 << 20)
      assert(mid.flatMap { case (a, b) =>
        val got = mutable.ArrayBuffer.empty[Long]
        store.scan(a, b, verifyCrc = true, permissive = false)(v => got += v.physicalOffset)
        got
      } == offsets)
    } finally store.close()
    val known = open(root, end = Some(offsets(100)))
    try assert(all(known)._1 == offsets.take(100))
    finally known.close()
  }

  test("listing ignores non-segment names, directories and special files (FIFOs are never opened)") {
    val (root, offsets) = writeStore(10, 4096)
    val dir = root.resolve("commitlog")
    Files.write(dir.resolve("00000000000000004096.tmp"), Array[Byte](1, 2, 3))
    Files.createDirectory(dir.resolve("00000000000000008192"))
    val fifo = dir.resolve("00000000000000012288")
    assert(new ProcessBuilder("mkfifo", fifo.toString).start().waitFor() == 0)
    val store = open(root)
    try {
      assert(store.segments.map(_.baseOffset) == Seq(0L))
      assert(all(store)._1 == offsets)
    } finally store.close()
  }

  test("errors: not a store, no commit log, unusable index files") {
    val missing = tempDir("rmqstore-empty")
    val e = intercept[StoreLayoutException](open(missing.resolve("nope")))
    assert(e.getMessage.endsWith("nope: no such store directory"))
    assert(intercept[StoreLayoutException](open(missing)).getMessage.contains("commit-log directory"))
    val (root, _) = writeStore(5, 4096)
    Files.createDirectory(root.resolve("index"))
    Files.write(root.resolve("index").resolve("20231114221320000"), new Array[Byte](1000))
    val store = open(root)
    try {
      val u = intercept[IndexUnavailableException](store.indexCandidates("TopicTest", "k1"))
      assert(u.getMessage.startsWith("index files unusable: ") && u.getMessage.contains("has no entries"))
    } finally store.close()
  }

  test("config: fastjson bare keys, .bak fallback, unparseable files named, bad topic names skipped") {
    val (root, _) = writeStore(5, 4096)
    val config = Files.createDirectories(root.resolve("config"))
    val offsets = "{\n\t\"offsetTable\":{\n\t\t\"T@g\":{0:5,1:7\n\t\t},\"bad\":{0:1},\"T@h@x\":{0:2}\n\t}\n}"
    Files.write(config.resolve("consumerOffset.json"), Array.emptyByteArray)
    Files.write(config.resolve("consumerOffset.json.bak"), offsets.getBytes(UTF_8))
    Files.write(config.resolve("topics.json"), "{\"topicConfigTable\":{\"T\":{},\"..\":{},\"a/b\":{}}}".getBytes(UTF_8))
    val store = open(root)
    try {
      assert(store.consumerOffsets == Map(("T", "g") -> Map(0 -> 5L, 1 -> 7L)))
      assert(store.topics == Seq("T"))
      assert(store.problems.exists(_.contains("topic '..' skipped: it is empty, '.' or '..'")))
      assert(store.problems.exists(_.contains("topic 'a/b' skipped: it contains '/'")))
      assert(intercept[InvalidTopicException](store.queueIds("../x")).getMessage ==
        "topic '../x' cannot be a directory inside the store: it contains '/'")
    } finally store.close()
    Files.write(config.resolve("consumerOffset.json"), "{oops".getBytes(UTF_8))
    Files.write(config.resolve("consumerOffset.json.bak"), "[".getBytes(UTF_8))
    val broken = open(root)
    try {
      val e = intercept[StoreCorruptionException](broken.consumerOffsets)
      assert(e.file == config.resolve("consumerOffset.json").toString && e.reason.startsWith("unparseable: "))
      assert(e.reason.contains("consumerOffset.json.bak: not fastjson/JSON at line 1"))
    } finally broken.close()
  }

  test("hex helper round trip") {
    assert(Encode.toHex(Encode.hex("00FF7A")) == "00FF7A")
  }
}
