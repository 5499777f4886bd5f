package io.rmqstore.spark.store

import scala.collection.mutable

import io.rmqstore.spark.format.Layout

/** Units lost at the end of a consume queue (docs/damage.md §3), found like python/rmqstore/store/lost_units.py.
  *
  * Zeroed units at a queue's end look like the zeros the broker pre-allocates past it, units pointing past the
  * log's valid end like those recovery truncates: either way the queue just seems shorter. The broker
  * dispatches records in log order (§4.1), so a record of the queue (its topic and queue id, a transaction type
  * that gets a unit) with QUEUEOFFSET at or past the queue's end, at or before the furthest record start a
  * consume queue or the index names (`frontier`), had its unit written: that unit is lost. A record past the
  * frontier is one the dispatcher has not reached yet. Such a record is in no unit's range, so only the bytes no
  * unit covers (`Coverage` gaps) between the queue's last record and the frontier are read, never the log
  * between. A service of the store facade (docs/design.md §1).
  */
private[spark] final class LostUnits(log: CommitLog, coverage: Coverage, index: IndexFiles, queues: Queues) {

  /** `LostUnits.dispatchFrontier`, read once, before the units a lost one is confirmed by are read again. */
  lazy val frontier: Option[Long] = LostUnits.dispatchFrontier(index, queues)

  /** The units missing at the end of the consume queue of (topic, queueId), in queue order, each naming the
    * commit-log offset of the record it should point to. Only unit files can lose units this way (a
    * BatchConsumeQueue ends at its first invalid unit, §4.5; a RocksDB queue has none).
    */
  def lostAtEnd(topic: String, queueId: Int): Seq[UnitDamage] = (queues.queue(topic, queueId), frontier) match {
    case (queue: ConsumeQueue, Some(reach)) if queue.segments.nonEmpty => lost(queue, topic, queueId, reach)
    case _ => Nil
  }

  private def lost(queue: ConsumeQueue, topic: String, queueId: Int, reach: Long): Seq[UnitDamage] = {
    val end = queue.maxOffset
    val last = if (end > queue.minOffset) queue.sliceUnits(end - 1, end, _ => ()).toSeq.headOption else None
    val start = last.fold(log.minOffset)(u => u.phyOffset + u.size)
    if (start > reach) Nil // the queue's last record is the furthest dispatched: nothing can be lost
    else {
      val orphans = mutable.TreeMap.empty[Long, Long] // queue offset -> the first record holding it
      log.rangeChunks(
        Ranges.within(coverage.uncoveredRanges, start, reach + 1),
        verifyCrc = false,
        permissive = true,
        ScanStats()
      ) { v =>
        if (
          v.queueId == queueId && v.queueOffset >= end && v.physicalOffset <= reach && Layout.isQueued(v.sysFlag) &&
          v.topic == topic
        ) orphans(v.queueOffset) = math.min(orphans.getOrElse(v.queueOffset, v.physicalOffset), v.physicalOffset)
        true
      }
      orphans.toSeq.collect { // read again: a broker dispatching now may have written it
        case (qo, phy) if !queue.sliceUnits(qo, qo + 1, _ => ()).exists(_.phyOffset == phy) =>
          queue.unitDamage(
            qo,
            s"is missing (the queue's units end at $end): the record of $topic/$queueId at queue offset $qo is at " +
              s"commit-log offset $phy, and the broker had dispatched up to $reach (a consume queue or the index " +
              "names it)"
          )
      }
    }
  }
}

private[spark] object LostUnits {

  /** The furthest record start a consume queue (each queue's last valid unit) or the index (the newest file's
    * endPhyOffset) names, None when none does: the broker had dispatched every record up to it (docs/damage.md
    * §2; python/rmqstore/store/lost_units.py `dispatch_frontier`).
    */
  def dispatchFrontier(index: IndexFiles, queues: Queues): Option[Long] =
    (index.newestEndPhyOffset.toSeq ++ queues.topics.flatMap(t =>
      queues.queueIds(t).flatMap(queues.queueLastPhy(t, _))
    )).reduceOption(_ max _)
}
