package io.rmqstore.spark.store

import java.nio.ByteBuffer

import io.rmqstore.spark.format.RocksCqLayout

/** The queues of a RocksDB `consumequeue/` (§4.7, `storeType=defaultRocksDB`), like
  * python/rmqstore/store/rocksdb_cq.py: (topic, queueId) -> (min entry or 0, max entry) of the `offset` column
  * family, for the queues with a max entry (as RocketMQ loads them).
  */
private[store] final class RocksConsumeQueues(val db: RocksDb) {
  val bounds: Map[(String, Int), (Long, Long)] = {
    val entries = db.items(RocksCqLayout.OffsetFamily, Array.emptyByteArray, None).flatMap { case (k, v) =>
      RocksCqLayout.offsetEntry(k, v)
    }
    entries.groupBy(e => (e._1, e._3)).collect {
      case (name, es) if es.exists(_._2 == RocksCqLayout.MaxTag) =>
        name -> (es.find(_._2 == RocksCqLayout.MinTag).fold(0L)(_._5), es.find(_._2 == RocksCqLayout.MaxTag).get._5)
    }
  }

  def topics: Set[String] = bounds.keySet.map(_._1)

  def queueIds(topic: String): IndexedSeq[Int] =
    bounds.keys.collect { case (t, q) if t == topic => q }.toIndexedSeq.sorted

  def queue(topic: String, queueId: Int, logMin: Long, logMax: Long): RocksConsumeQueue = {
    val (low, high) = bounds.getOrElse((topic, queueId), (0L, -1L))
    new RocksConsumeQueue(db, topic, queueId, low, math.max(low, high + 1), logMin, logMax)
  }
}

/** One queue of the RocksDB: units from the min entry to the max entry; units pointing before the log's min
  * offset (retention) or at/after its valid end are left out, found by bisection on the physical offset (units
  * follow log order along a queue).
  */
private[store] final class RocksConsumeQueue(
    db: RocksDb,
    topic: String,
    queueId: Int,
    storedMin: Long,
    storedEnd: Long,
    logMin: Long,
    logMax: Long
) extends QueueReader {

  private def phyAt(queueOffset: Long): Option[Long] =
    db.get("default", RocksCqLayout.unitKey(topic, queueId, queueOffset)).map(v =>
      ByteBuffer.wrap(checked(queueOffset, v)).getLong(0)
    )

  /** A unit value, StoreCorruptionException naming the queue and offset unless it is 28 bytes. */
  private def checked(queueOffset: Long, value: Array[Byte]): Array[Byte] =
    if (value.length == RocksCqLayout.UnitValueSize) value
    else
      throw new StoreCorruptionException(
        db.path,
        0,
        s"queue $topic/$queueId offset $queueOffset: unit value is ${value.length} bytes, not ${RocksCqLayout.UnitValueSize}"
      )

  /** The first queue offset in [lo, hi) whose unit points at or after `phy` (hi if none); a missing unit counts
    * as below (RocketMQ's binarySearchInCQ moves past it).
    */
  private def firstAtLeast(from: Long, until: Long, phy: Long): Long = {
    var (lo, hi) = (from, until)
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (phyAt(mid).forall(_ < phy)) lo = mid + 1 else hi = mid
    }
    lo
  }

  lazy val maxOffset: Long = firstAtLeast(storedMin, storedEnd, logMax)
  lazy val minOffset: Long = firstAtLeast(storedMin, maxOffset, logMin)

  def units(start: Long, end: Long): Iterator[QueueUnit] = {
    val lo = math.max(start, minOffset)
    val hi = math.min(end, maxOffset)
    if (lo >= hi) return Iterator.empty
    val items = db.items(
      "default",
      RocksCqLayout.unitKey(topic, queueId, lo),
      Some(RocksCqLayout.unitKey(topic, queueId, hi))
    )
    items.iterator.flatMap { case (k, v) =>
      val b = ByteBuffer.wrap(checked(RocksCqLayout.queueOffsetOf(k), v))
      val (phy, size) = (b.getLong(0), b.getInt(8))
      if (size > 0 && phy >= logMin && phy < logMax)
        Some(QueueUnit(RocksCqLayout.queueOffsetOf(k), phy, size, b.getLong(12)))
      else None
    }
  }

  /** PHYSICALOFFSET of the last stored unit, units past the log's valid end included (docs/damage.md §2). */
  def lastPhyOffset: Option[Long] = if (storedEnd > storedMin) phyAt(storedEnd - 1) else None

  def spans(start: Long, end: Long): Seq[(Long, Long)] = {
    val (a, b) = (math.max(start, minOffset), math.min(end, maxOffset))
    if (a < b) Seq((a, b)) else Nil
  }

  def unitsFrom(firstPhy: Long): Seq[QueueUnit] =
    units(firstAtLeast(minOffset, maxOffset, firstPhy), maxOffset).toSeq
}
