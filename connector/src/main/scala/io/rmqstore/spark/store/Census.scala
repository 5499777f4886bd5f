package io.rmqstore.spark.store

import scala.collection.mutable

import io.rmqstore.spark.format.MultiDispatch

/** What a group of table rows holds that metadata can tell: how many, and the smallest and largest queue offset
  * and physical offset among them.
  */
final class Tally extends Serializable { // kept tallies (`Census.whole`) are only read: merge into a new one
  var count = 0L
  var minQueueOffset: Long = Long.MaxValue
  var maxQueueOffset: Long = Long.MinValue
  var minPhyOffset: Long = Long.MaxValue
  var maxPhyOffset: Long = Long.MinValue

  def add(queueOffset: Long, phyOffset: Long): Unit = {
    count += 1
    minQueueOffset = math.min(minQueueOffset, queueOffset)
    maxQueueOffset = math.max(maxQueueOffset, queueOffset)
    minPhyOffset = math.min(minPhyOffset, phyOffset)
    maxPhyOffset = math.max(maxPhyOffset, phyOffset)
  }

  def merge(other: Tally): Unit = {
    count += other.count
    minQueueOffset = math.min(minQueueOffset, other.minQueueOffset)
    maxQueueOffset = math.max(maxQueueOffset, other.maxQueueOffset)
    minPhyOffset = math.min(minPhyOffset, other.minPhyOffset)
    maxPhyOffset = math.max(maxPhyOffset, other.maxPhyOffset)
  }
}

/** The table's rows (every valid record of the log, design §2) counted from metadata, reading no record a unit
  * points to (issue #20 item 4). Per segment the records are its units' and those of the bytes no unit covers
  * (`Coverage`, design §3.2): a unit outside those bytes is one record, of its queue's topic and id at its
  * queue offset (the dispatcher builds it from the record, §4.1); the records of the uncovered bytes are read
  * (headers and all, FAILFAST: damage there raises `StoreCorruptionException`). A service of the store facade
  * (docs/design.md §1); the caller refuses the queue shapes where a unit is not one row (BatchCQ, §4.5).
  */
private[spark] final class Census(
    log: CommitLog,
    queues: Queues,
    coverage: Coverage,
    records: RecordReader,
    cache: Option[CacheIdentity]
) {

  /** `tally` of every record of the log, kept per JVM and on disk where the store has a cache identity
    * (`CensusCache`) while the log's segments and valid end and every queue file (path, size, modification time)
    * are the same: a later query, in this JVM or a new one, lists the queue files and reads none of them (empty
    * stats). Queues kept in RocksDB (§4.7) are tallied every time.
    */
  def whole(): Option[(Map[(String, Int), Tally], ScanStats)] = {
    val all = IndexedSeq((log.minOffset, log.end))
    val readers = for (t <- queues.topics; q <- queues.queueIds(t)) yield queues.queue(t, q)
    val files = readers.map {
      case f: QueueFiles => f.segments.map(s => (s.path, s.size, s.modifiedMs))
      case _ => return tally((_, _, _, _) => true, all)
    }
    val key = (log.segments.map(s => (s.path, s.size, s.modifiedMs)), log.minOffset, log.end, files)
    lazy val disk = cache.map(new CensusCache(_)) // its file name hashes the real paths: only on a miss here
    Option(Census.kept.get(key))
      .orElse(disk.flatMap(_.load(key)).map { stored =>
        val found = stored.map((_, ScanStats()))
        Census.kept.put(key, found)
        found
      })
      .map(_.map { case (tallies, _) => (tallies, ScanStats()) })
      .getOrElse {
        val found = tally((_, _, _, _) => true, all)
        Census.kept.put(key, found)
        disk.foreach(_.save(key, found.map(_._1)))
        found
      }
  }

  /** Tallies per (topic, queueId) of the records inside `ranges` (sorted, disjoint physical ranges) that
    * `keep(topic, queueId, queueOffset, physicalOffset)` selects, and the stats of the uncovered bytes read;
    * None when the units do not name each record once in its own queue: two units of the record's queues (damaged
    * queues: only a scan can tell which is right), or an `%LMQ%` unit (§4.6) at a record no unit of its own
    * queue names.
    */
  def tally(
      keep: (String, Int, Long, Long) => Boolean,
      ranges: IndexedSeq[(Long, Long)]
  ): Option[(Map[(String, Int), Tally], ScanStats)] = {
    val gaps = coverage.uncoveredRanges
    val gapStarts = gaps.map(_._1).toArray
    val rangeStarts = ranges.map(_._1).toArray
    val out = mutable.HashMap.empty[(String, Int), Tally]
    val own = mutable.ArrayBuilder.make[Long]
    val copies = mutable.ArrayBuilder.make[Long]
    for (topic <- queues.topics; queueId <- queues.queueIds(topic)) {
      val lmq = topic.startsWith(MultiDispatch.LmqPrefix)
      lazy val tally = out.getOrElseUpdate((topic, queueId), new Tally)
      val queue = queues.queue(topic, queueId)
      for (u <- queue.units(queue.minOffset, queue.maxOffset)) // streamed: a queue can hold millions of units
        if (u.phyOffset >= log.minOffset && !Census.inside(gaps, gapStarts, u.phyOffset)) {
          if (lmq) copies += u.phyOffset
          else {
            own += u.phyOffset
            if (Census.inside(ranges, rangeStarts, u.phyOffset) && keep(topic, queueId, u.queueOffset, u.phyOffset))
              tally.add(u.queueOffset, u.phyOffset)
          }
        }
    }
    val named = own.result()
    java.util.Arrays.sort(named)
    if ((1 until named.length).exists(i => named(i) == named(i - 1))) return None
    if (copies.result().exists(java.util.Arrays.binarySearch(named, _) < 0)) return None
    val uncovered = Ranges.subtract(gaps, Ranges.subtract(Seq((log.minOffset, log.end)), ranges))
    val stats = records.scanRanges(uncovered, verifyCrc = false, permissive = false) { v =>
      if (keep(v.topic, v.queueId, v.queueOffset, v.physicalOffset))
        out.getOrElseUpdate((v.topic, v.queueId), new Tally).add(v.queueOffset, v.physicalOffset)
    }
    Some((out.filter(_._2.count > 0).toMap, stats))
  }
}

private[store] object Census {

  /** Stores whose `whole` tallies are kept per JVM (least recently used dropped first). */
  final val KeptStores = 16

  private[store] val kept = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[AnyRef, Option[(Map[(String, Int), Tally], ScanStats)]](16, 0.75f, true) {
      override def removeEldestEntry(
          eldest: java.util.Map.Entry[AnyRef, Option[(Map[(String, Int), Tally], ScanStats)]]
      ): Boolean = size > KeptStores
    }
  )

  /** Whether `offset` lies in one of `ranges` (sorted, disjoint; `starts` their starts). */
  def inside(ranges: IndexedSeq[(Long, Long)], starts: Array[Long], offset: Long): Boolean = {
    val i = java.util.Arrays.binarySearch(starts, offset)
    val at = if (i >= 0) i else -i - 2
    at >= 0 && offset < ranges(at)._2
  }
}
