package io.rmqstore.spark.plan

import scala.collection.mutable

import io.rmqstore.spark.store.{Store, UnknownNameException}

/** Whether a queue's lag is known (design §10; python/rmqstore/plan/lag.py `LagState`). */
object LagState {
  final val Ok = "ok"
  final val NoOffset = "no-offset"
  final val PastEnd = "offset-past-end"
  final val RetainedAway = "retained-away"
}

/** One queue's lag for one group (python/rmqstore/plan/lag.py `QueueLag`); the counts are None unless `state`
  * is `LagState.Ok`, `ageMs` is the log end's store time minus `oldestStoreTime` (0 when caught up, negative
  * when a broker clock stepped back).
  */
final case class QueueLag(
    group: String,
    topic: String,
    queueId: Int,
    state: String,
    committedOffset: Option[Long],
    minOffset: Long,
    maxOffset: Long,
    messages: Option[Long],
    bytes: Option[Long],
    oldestStoreTime: Option[Long],
    ageMs: Option[Long]
)

/** Consumer lag per group, topic and queue (design §10), from the consume queues (§4.3-§4.7) and the committed
  * offsets (§4.8), reading record headers only (a store time), never a body: python/rmqstore/plan/lag.py
  * `consumer_lag`. A lag that cannot be known is a named state with no counts, never 0; a negative difference
  * is never clamped.
  */
object Lag {
  final val RetryPrefix = "%RETRY%"

  /** (the log end's store time, the lag of `group`'s queues (every group's when None), of `topic` only when
    * given). UnknownNameException naming the group when it committed no offset, or the topic when no group (or
    * not `group`) consumes it, so a typo never reads as no lag.
    */
  def apply(store: Store, group: Option[String], topic: Option[String]): (Option[Long], Seq[QueueLag]) = {
    val table = mutable.Map.empty[(String, String), Map[Int, Long]]
    group match {
      case Some(g) => store.groupOffsets(g).foreach { case (t, offsets) => table((t, g)) = offsets }
      case None => table ++= store.consumerOffsets
    }
    val known = store.topics.toSet
    for (g <- table.keys.map(_._2).toSet[String] if known(RetryPrefix + g))
      table.getOrElseUpdate((RetryPrefix + g, g), Map.empty)
    for (t <- topic if !table.keys.exists(_._1 == t))
      throw new UnknownNameException(
        "topic",
        t,
        table.keys.map(_._1).toSeq.distinct.sorted,
        "has no committed offsets" + group.fold("")(g => s" of group '$g'")
      )
    val pending = for {
      ((t, g), offsets) <- table.toSeq.sortBy { case ((t, g), _) => (g, t) } if topic.forall(_ == t)
      q <- (offsets.keySet ++ (if (known(t)) store.queueIds(t) else Nil)).toSeq.sorted
    } yield queueLag(store, g, t, q, offsets.get(q))
    val times = storeTimes(store, pending.flatMap(_._2))
    val end = logEndTime(store)
    (end, pending.map { case (lag, phy) => timed(lag, phy.flatMap(times.get), end) })
  }

  /** The lag of one queue without its times, and where its oldest unconsumed record is (None: none). */
  private def queueLag(store: Store, group: String, topic: String, queueId: Int, committed: Option[Long]) = {
    val (lo, hi) = store.queueRange(topic, queueId)
    val state = committed match {
      case None => LagState.NoOffset
      case Some(c) if c > hi => LagState.PastEnd
      case Some(c) if c < lo => LagState.RetainedAway
      case _ => LagState.Ok
    }
    val lag = QueueLag(group, topic, queueId, state, committed, lo, hi, None, None, None, None)
    if (state != LagState.Ok) (lag, None)
    else {
      val c = committed.get
      var (bytes, first) = (0L, Option.empty[Long])
      store.queueUnits(topic, queueId, store.queueFloor(topic, queueId, c), hi).foreach { u =>
        bytes += u._3
        if (first.isEmpty) first = Some(u._2)
      }
      (lag.copy(messages = Some(hi - c), bytes = Some(bytes)), first)
    }
  }

  /** `lag` with the store time of its oldest unconsumed record and its age against `end`. */
  private def timed(lag: QueueLag, oldest: Option[Long], end: Option[Long]): QueueLag = {
    val age = if (lag.messages.contains(0L)) Some(0L) else for (o <- oldest; e <- end) yield e - o
    lag.copy(oldestStoreTime = oldest, ageMs = age)
  }

  /** Physical offset -> STORETIMESTAMP (ms) of the records there, headers only; a damaged record is left out
    * (docs/damage.md §3), so its time reads as unknown.
    */
  def storeTimes(store: Store, offsets: Seq[Long]): Map[Long, Long] = {
    val times = mutable.Map.empty[Long, Long]
    if (offsets.nonEmpty)
      store.readAt(offsets.distinct.sorted.toArray, verifyCrc = false, permissive = true, strict = false) { v =>
        times(v.physicalOffset) = v.storeTimestampMs
      }
    times.toMap
  }

  /** STORETIMESTAMP (ms) of the record that the queues' last units point at furthest into the log. */
  def logEndTime(store: Store): Option[Long] = {
    val lasts = for {
      t <- store.topics
      q <- store.queueIds(t)
      (lo, hi) = store.queueRange(t, q) if hi > lo
      unit <- store.queueUnits(t, q, store.queueFloor(t, q, hi - 1), hi).toSeq.lastOption
    } yield unit._2
    if (lasts.isEmpty) None else storeTimes(store, Seq(lasts.max)).get(lasts.max)
  }
}
