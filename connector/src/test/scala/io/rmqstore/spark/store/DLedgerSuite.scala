package io.rmqstore.spark.store

import java.nio.ByteBuffer
import java.nio.file.{Files, Path, StandardCopyOption}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/** A DLedger commit log (docs/format.md §2.13) damaged the ways a commit log is (§2.12), like
  * tests/store/test_dledger.py: a torn or cut last entry ends the log at that entry, a bad entry header before
  * the end is damage (FAILFAST names it, PERMISSIVE steps over that record only); a stream's tail walk; and the
  * refusal.
  */
class DLedgerSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val fixture = "rmq-5.4.0-dledger"
  private val header = 48
  private val records = Oracle.records(fixture)
  private val offsets = records.map(_.get("commitLogOffset").asLong)
  private val temporary = mutable.ArrayBuffer.empty[Path]

  override def afterAll(): Unit =
    temporary.foreach(dir => Files.walk(dir).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(Files.delete(_)))

  private def copy(): Path = {
    val dir = Files.createTempDirectory("rmqstore-dledger")
    temporary += dir
    val from = Oracle.FixturesDir.resolve(fixture).resolve("store")
    Files.walk(from).iterator.asScala.foreach { p =>
      val to = dir.resolve(from.relativize(p).toString)
      if (Files.isDirectory(p)) Files.createDirectories(to) else Files.copy(p, to, StandardCopyOption.REPLACE_EXISTING)
    }
    dir
  }

  /** The data file holding physical `offset`, and the offset's position in it. */
  private def dataFile(root: Path, offset: Long): (Path, Int) = {
    val base = Files.list(root.resolve("dledger-n0/data")).iterator.asScala.map(_.getFileName.toString.toLong)
      .filter(_ <= offset).max
    (root.resolve(f"dledger-n0/data/$base%020d"), (offset - base).toInt)
  }

  private def scanned(store: Store, permissive: Boolean): Seq[Long] = {
    val seen = mutable.ArrayBuffer.empty[Long]
    store.scan(Long.MinValue, Long.MaxValue, verifyCrc = true, permissive)(v => seen += v.physicalOffset)
    seen.toSeq
  }

  private def open(root: Path): Store = Store.open(StoreLocation(root.toString), null, None)

  for (damage <- Seq("torn", "cut"))
    test(s"a $damage last entry ends the log at that entry") {
      val root = copy()
      val (last, size) = (offsets.last, records.last.get("storeSize").asInt)
      val (file, pos) = dataFile(root, last)
      val data = Files.readAllBytes(file)
      if (damage == "torn") java.util.Arrays.fill(data, pos + size / 2, pos + size, 0.toByte)
      Files.write(file, if (damage == "torn") data else data.take(pos + 20))
      val store = open(root)
      try {
        assert(store.logEnd == last - header)
        assert(scanned(store, permissive = false) == offsets.init)
      } finally store.close()
    }

  test("a bad entry header before the end is damage") {
    val root = copy()
    val victim = offsets.find(o => o % 8192 == header && o > 8192).get // first record of a sealed file
    val (file, pos) = dataFile(root, victim)
    val data = Files.readAllBytes(file)
    ByteBuffer.wrap(data).putLong(pos - header + 24, 12345L) // the entry's pos field
    Files.write(file, data)
    val store = open(root)
    try {
      val failure = intercept[StoreCorruptionException](scanned(store, permissive = false))
      assert(failure.offset == victim && failure.getMessage.contains("DLedger entry at position"), failure.getMessage)
      assert(failure.getMessage.contains("pos 12345"), failure.getMessage)
      assert(scanned(store, permissive = true) == offsets.filter(_ != victim))
    } finally store.close()
  }

  /** The tail of the store at `root` as a stream sees it (python tests/streaming/test_dledger_stream.py). */
  private def withTail[T](root: Path)(f: Tail => T): T = {
    val store = open(root)
    val tail = store.tail(new LogWalkCache, permissive = false)
    try f(tail)
    finally { tail.close(); store.close() }
  }

  test("a stream's tail steps entry by entry in commitLogOffsets and holds at an entry being written") {
    val root = copy()
    val end = offsets.last + records.last.get("storeSize").asInt + header
    withTail(root) { tail =>
      assert(tail.minOffset == header && tail.walk(header).end == end)
      assert(tail.walk(header, Limits(records = Some(7))).end == offsets(7))
      assert(tail.countRecords(header, end) == offsets.length)
      assert(tail.isRecordStart(offsets(5)) && !tail.isRecordStart(offsets(5) - header))
      val blank = Oracle.all(fixture).get("blanks").get(0).get("offset").asLong + header // past the first file's last
      assert(tail.isRecordStart(blank) && tail.canonical(blank) == 8192 + header)
    }
    val cut = offsets(offsets.length - 3)
    val (file, pos) = dataFile(root, cut)
    val data = Files.readAllBytes(file)
    java.util.Arrays.fill(data, pos - header + 20, data.length, 0.toByte) // written up to the entry's pos field
    Files.write(file, data)
    Files.createFile(root.resolve("abort")) // a broker writes: no consume-queue unit or index entry names it yet
    for (dir <- Seq("consumequeue", "index"))
      Files.walk(root.resolve(dir)).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(Files.delete(_))
    withTail(root) { tail =>
      val advance = tail.walk(header)
      assert(advance.end == cut && advance.held.contains(cut))
    }
  }

  test("a DLedger log with the commitlog/ it replaced is refused by name") {
    val root = copy()
    val old = Files.createDirectories(root.resolve("commitlog"))
    Files.write(old.resolve("00000000000000000000"), new Array[Byte](8192))
    val failure = intercept[UnsupportedShapeException](open(root))
    assert(failure.getMessage.contains("reading it with the commitlog/ it replaced refused"), failure.getMessage)
    assert(failure.getMessage.contains("dividedCommitlogOffset"), failure.getMessage)
  }
}
