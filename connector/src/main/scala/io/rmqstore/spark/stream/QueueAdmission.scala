package io.rmqstore.spark.stream

import io.rmqstore.spark.format.Layout
import io.rmqstore.spark.store.Limits

/** How far the queues of a queue-mode stream may advance in one trigger
  * (python/rmqstore/spark/offsets.py `admit_queue_units`).
  */
object QueueAdmission {
  type Queue = (String, Int)

  /** New queue offsets after admitting units in commit-log order (oldest message first) within `limits`.
    *
    * `unitsOf(queue, start, end)` gives that queue's units (physical offset, size) in queue order.
    * Without limits every queue moves to its end. A queue can contribute at most `limits.records` units,
    * and at most bytes/91 + 1 (91 bytes being the smallest record), so only that many are read per queue.
    * A batch admits at least one unit.
    */
  def admit(
      starts: Map[Queue, Long],
      ends: Map[Queue, Long],
      unitsOf: (Queue, Long, Long) => Seq[(Long, Int)],
      limits: Limits
  ): Map[Queue, Long] = {
    if (limits == Limits.NoLimits) return ends
    val byBytes = limits.bytes.map(_ / Layout.MinRecordSize + 1)
    val cap = (limits.records.toSeq ++ byBytes).min
    val result = ends.map { case (q, end) => q -> starts.getOrElse(q, end) }
    val queues = ends.keys.toSeq.sorted(StoreOffset.QueueOrder).filter(q => ends(q) > starts.getOrElse(q, ends(q)))
    val units = queues.zipWithIndex.flatMap { case (q, owner) =>
      val start = starts(q)
      unitsOf(q, start, math.min(ends(q), start + cap)).map { case (phy, size) => (phy, size, owner) }
    }.sortBy(_._1) // stable: equal offsets keep queue order
    var keep = units.length.toLong
    limits.records.foreach(r => keep = math.min(keep, r))
    limits.bytes.foreach { b =>
      val within = units.iterator.scanLeft(0L)(_ + _._2).drop(1).takeWhile(_ <= b).length
      keep = math.min(keep, math.max(within, 1).toLong)
    }
    val admitted = units.take(keep.toInt).groupBy(_._3).map { case (owner, us) => owner -> us.length }
    result ++ queues.zipWithIndex.map { case (q, owner) => q -> (starts(q) + admitted.getOrElse(owner, 0)) }
  }
}
