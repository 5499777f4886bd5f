package io.rmqstore.spark

import plan.{Compare, InSet, KeysContainAny, Predicate, QueueWindow, QueueWindows}
import format.MultiDispatch
import store.Store

/** Row restrictions given as options (part of the DataFrame, not pushed filters), per store, as
  * python/rmqstore/spark/reader.py `_option_predicates` and plan/queues.py `resolve_windows`.
  */
object OptionPredicates {

  def forStore(options: RmqOptions, store: Store): Seq[Predicate] = {
    val preds = Seq.newBuilder[Predicate]
    // an LMQ queue's records keep their own topic: naming one makes the read a queue read (§4.6)
    val lmqRead = options.topics.filter(_.exists(_.startsWith(MultiDispatch.LmqPrefix)))
    val given = queueOffsets(options.startingOffsets, store)
    val starting = lmqRead.map(_.map(_ -> Map.empty[Int, Long]).toMap ++ given.getOrElse(Map.empty)).orElse(given)
    val ending = queueOffsets(options.endingOffsets, store)
    if (lmqRead.isEmpty) options.topics.foreach(ts => preds += InSet("topic", ts))
    options.keys.foreach(ks => preds += KeysContainAny(ks))
    options.startingTimestamp.foreach(ms => preds += Compare("storeTimestamp", Predicate.Ge, ms * 1000L))
    options.endingTimestamp.foreach(ms => preds += Compare("storeTimestamp", Predicate.Lt, ms * 1000L))
    options.startingOffsets match {
      case OffsetSpec.Physical(o) => preds += Compare("commitLogOffset", Predicate.Ge, o)
      case _ =>
    }
    options.endingOffsets match {
      case OffsetSpec.Physical(o) => preds += Compare("commitLogOffset", Predicate.Lt, o)
      case _ =>
    }
    if (starting.isDefined || ending.isDefined)
      preds += resolveWindows(store, starting.getOrElse(Map.empty), ending.getOrElse(Map.empty), options.topics)
    preds.result()
  }

  private def queueOffsets(spec: OffsetSpec, store: Store): Option[Map[String, Map[Int, Long]]] = spec match {
    case OffsetSpec.Queues(queues) => Some(queues)
    case OffsetSpec.Group(group) =>
      Some(store.consumerOffsets.collect { case ((topic, g), queues) if g == group => topic -> queues })
    case _ => None
  }

  /** Windows for every queue of the topics named in `starting`/`ending` (∩ `topics` when given);
    * -2 = earliest, -1 = latest, unnamed queues of a named topic span the whole queue.
    */
  private def resolveWindows(
      store: Store,
      starting: Map[String, Map[Int, Long]],
      ending: Map[String, Map[Int, Long]],
      topics: Option[Seq[String]]
  ): QueueWindows = {
    val named = (starting.keySet ++ ending.keySet).filter(t => topics.forall(_.contains(t)))
    val known = store.topics.toSet
    val windows = for {
      topic <- (named intersect known).toIndexedSeq.sorted
      queueId <- store.queueIds(topic)
    } yield {
      val (first, last) = store.queueRange(topic, queueId)
      def resolve(o: Long) =
        if (o == RmqOptions.EarliestQueueOffset) first else if (o == RmqOptions.LatestQueueOffset) last else o
      val asked = resolve(starting.getOrElse(topic, Map.empty).getOrElse(queueId, RmqOptions.EarliestQueueOffset))
      val start = math.max(store.queueFloor(topic, queueId, asked), first) // a BatchCQ batch whole (§4.5)
      val end =
        math.min(resolve(ending.getOrElse(topic, Map.empty).getOrElse(queueId, RmqOptions.LatestQueueOffset)), last)
      QueueWindow(topic, queueId, start, end)
    }
    QueueWindows(windows.filter(w => w.start < w.end))
  }
}
