package io.rmqstore.spark.store

import java.nio.ByteBuffer
import java.nio.file.{Files, Path}

import scala.collection.mutable

import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.Encode.{blank, properties, record}

/** The torn-record rule and the range arithmetic of `Tail` on synthetic stores (the Python engine's
  * cases are in tests/streaming/test_offsets.py).
  */
class TailSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val SegSize = 4096
  private val temporary = mutable.ArrayBuffer.empty[Path]

  override def afterAll(): Unit =
    temporary.foreach { dir =>
      Files.walk(dir).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
    }

  /** A store stand-in: records appended to pre-sized segments (BLANK-ended), `abort` while "running". */
  private final class Broker {
    val root: Path = Files.createTempDirectory("rmqstore-tail-suite")
    temporary += root
    private val dir = Files.createDirectories(root.resolve("commitlog"))
    Files.write(root.resolve("abort"), Array[Byte](1))
    private var base = 0L
    private var seg = ByteBuffer.allocate(SegSize)
    val offsets: mutable.ArrayBuffer[(Long, Int)] = mutable.ArrayBuffer.empty
    flush()

    private def rec(i: Int, phy: Long) =
      record(body = Array.fill[Byte](150)(i.toByte), phy = phy, queueOffset = i, props = properties("KEYS" -> s"k$i"))

    def append(count: Int): Unit = for (_ <- 0 until count) {
      val i = offsets.size
      if (rec(i, 0).length + 8 > seg.remaining) {
        seg.put(blank(seg.remaining))
        flush()
        base += SegSize
        seg = ByteBuffer.allocate(SegSize)
      }
      val bytes = rec(i, base + seg.position())
      offsets += ((base + seg.position(), bytes.length))
      seg.put(bytes)
      flush()
    }

    /** Zero the bytes after `position` of the current segment (the broker has not written them yet). */
    def truncateTo(position: Long): Unit = {
      seg.position((position - base).toInt)
      java.util.Arrays.fill(seg.array, seg.position(), SegSize, 0.toByte)
      flush()
    }

    private def flush(): Unit = Files.write(dir.resolve(f"$base%020d"), seg.array)

    /** Consume-queue units of records [0, n) of TopicTest queue 0 (§4.1). */
    def dispatch(n: Int): Unit = {
      val cq = Files.createDirectories(root.resolve("consumequeue/TopicTest/0"))
      val units = ByteBuffer.allocate(20 * 64)
      offsets.take(n).foreach { case (phy, size) => units.putLong(phy).putInt(size).putLong(0L) }
      Files.write(cq.resolve(f"${0}%020d"), units.array)
    }

    def stop(): Unit = Files.deleteIfExists(root.resolve("abort"))

    def tail(cache: LogWalkCache = new LogWalkCache, permissive: Boolean = false): Tail =
      Store.open(StoreLocation(root.toString), null, None, checkCrcAtEnd = false).tail(cache, permissive)

    def end(i: Int): Long = offsets(i)._1 + offsets(i)._2
  }

  test("the last record waits until the next write, its consume-queue unit or a stopped broker seals it") {
    val broker = new Broker
    broker.append(4)
    val last = broker.offsets(3)._1
    val walk = broker.tail().walk(0)
    assert((walk.end, walk.records) == (last, 3L)) // complete and valid, but nothing proves it finished
    assert(walk.bytes == broker.offsets.take(3).map(_._2.toLong).sum)
    broker.dispatch(4) // rule c
    assert(broker.tail().walk(0).end == broker.end(3))
    broker.dispatch(3)
    assert(broker.tail().walk(0).end == last)
    broker.append(1) // rule b: the next write started
    broker.truncateTo(broker.offsets(4)._1 + 8)
    assert(broker.tail().walk(0).end == broker.end(3))
    broker.stop() // rule d, and the torn header of record 4 is not a record
    assert(broker.tail().walk(0).end == broker.end(3))
  }

  test("a record that is not whole yet (a prefix of its bytes) is never admitted") {
    val broker = new Broker
    broker.append(3)
    broker.truncateTo(broker.offsets(2)._1 + 100) // inside the body: BODYCRC fails
    broker.stop()
    assert(broker.tail().walk(0).end == broker.offsets(2)._1)
  }

  test("segments roll over: sealed segments are skipped whole, limits cut inside them, counts are cached") {
    val broker = new Broker
    broker.append(40)
    broker.stop()
    val cache = new LogWalkCache
    val tail = broker.tail(cache)
    assert(tail.segments.size >= 3, "the test needs several segments")
    val end = tail.walk(0)
    assert(end.end == broker.end(39))
    assert(tail.countRecords(0, end.end) == 40)
    val step = tail.walk(0, Limits(records = Some(7)))
    assert(step.records == 7 && step.end == tail.canonical(broker.offsets(7)._1))
    val one = tail.walk(broker.offsets(10)._1, Limits(bytes = Some(1)))
    assert(one.records == 1 && one.end == tail.canonical(broker.end(10)))
    assert(tail.countRecords(broker.offsets(5)._1, end.end) == 35)
    val bytes = tail.walk(0, Limits(bytes = Some(broker.offsets.take(3).map(_._2.toLong).sum)))
    assert(bytes.records == 3)
    val stopped = tail.walk(0, stop = Some(broker.offsets(12)._1))
    assert(stopped.records == 12 && stopped.end == broker.offsets(12)._1)
    val rolled = broker.offsets.indices.find(i => i > 0 && broker.offsets(i)._1 % SegSize == 0).get - 1
    val afterRolled = broker.end(rolled)
    assert(afterRolled % SegSize != 0 && tail.canonical(afterRolled) % SegSize == 0)
    assert(tail.isRecordStart(broker.offsets(9)._1) && !tail.isRecordStart(broker.offsets(9)._1 + 4))
    tail.close()
  }

  test("damage in a sealed segment fails FAILFAST and is stepped over PERMISSIVE") {
    val broker = new Broker
    broker.append(30)
    broker.stop()
    val (bad, _) = broker.offsets(2)
    val path = broker.root.resolve("commitlog").resolve(f"${0}%020d")
    val data = Files.readAllBytes(path)
    data(bad.toInt + 5) = 0x11 // magic
    Files.write(path, data)
    assert(broker.tail().walk(0).end == broker.end(29), "without limits sealed segments are not read")
    val limited = Limits(records = Some(1000))
    val e = intercept[StoreCorruptionException](broker.tail().walk(0, limited))
    assert(e.offset == bad && e.getMessage.contains("not a record or BLANK") && e.getMessage.contains("PERMISSIVE"))
    val tail = broker.tail(permissive = true)
    assert(tail.walk(0, limited).end == broker.end(29))
    assert(tail.skipped.size == 1 && tail.skipped.head.contains(s"physical offset $bad"))
  }

  /** Flip the byte at `at` of the first segment. */
  private def flip(broker: Broker, at: Long): Unit = {
    val path = broker.root.resolve("commitlog").resolve(f"${0}%020d")
    val data = Files.readAllBytes(path)
    data(at.toInt) = (data(at.toInt) ^ 1).toByte
    Files.write(path, data)
  }

  test("damage that a valid record follows in the active segment is no torn tail (damage.md §2)") {
    val broker = new Broker
    broker.append(6)
    broker.truncateTo(broker.offsets(5)._1 + 100) // record 5 is still being written
    val (bad, size) = broker.offsets(2)
    flip(broker, bad + size - 170) // a body byte: BODYCRC fails
    val e = intercept[StoreCorruptionException](broker.tail().walk(0))
    assert(e.offset == bad && e.getMessage.contains("BODYCRC") && e.getMessage.contains("valid record follows"))
    val walk = broker.tail(permissive = true).walk(0)
    assert((walk.end, walk.records, walk.held) == (broker.offsets(5)._1, 4L, Some(broker.offsets(5)._1)))
  }

  test("garbage that a consume-queue unit is past is damage; PERMISSIVE goes on at the next record") {
    val broker = new Broker
    broker.append(6)
    broker.dispatch(6)
    broker.stop()
    val bad = broker.offsets(3)._1
    flip(broker, bad + 5) // MAGICCODE
    val e = intercept[StoreCorruptionException](broker.tail().walk(0))
    assert(e.offset == bad && e.getMessage.contains("consume queues or index name"))
    val walk = broker.tail(permissive = true).walk(0)
    assert((walk.end, walk.records, walk.held) == (broker.end(5), 5L, None))
  }
}
