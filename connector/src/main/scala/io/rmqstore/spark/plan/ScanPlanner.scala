package io.rmqstore.spark.plan

import io.rmqstore.spark.format.MsgId
import io.rmqstore.spark.store.Store

/** Predicates -> read tasks, per store: the JVM twin of python/rmqstore/plan/planner.py, without its
  * index and consume-queue paths so far.
  *
  * 1. `commitLogOffset` / `msgId` points (also an OR whose every branch has points): read those offsets.
  * 2. `commitLogOffset` ranges and `storeTimestamp` ranges: commit-log byte ranges (`Store.timeRanges`:
  *    one range unless the broker's clock stepped back), intersected with the offset bounds.
  * 3. Otherwise the whole log, split by `Store.splitRanges` (`maxBytesPerPartition`, `minPartitions`).
  * `key` / `uniqKey` / `topic` / `queueId` / `queueOffset` / `tags` predicates are consumed but only
  * confirmed: the Python planner's index probes and consume-queue slices must also scan the records
  * the index and queues lack (transaction PREPARED / ROLLBACK records, queues behind the log), which
  * needs the store's coverage ranges; until the JVM store has them these predicates read a scan, which
  * returns what a scan returns by construction. The reader confirms every row against all predicates.
  */
object ScanPlanner {
  val OffsetsPerTask = 200000

  final case class Settings(maxBytesPerPartition: Long, minPartitions: Option[Int])

  private final case class Bounds(
      points: Option[Set[Long]],
      lo: Option[Long],
      hi: Option[Long],
      beginMs: Option[Long],
      endMs: Option[Long]
  )

  def plan(stores: IndexedSeq[Store], predicates: IndexedSeq[Seq[Predicate]], settings: Settings): ReadPlan = {
    val perStore = stores.indices.map(i => planStore(i, stores(i), bounds(predicates(i)), settings))
    ReadPlan(perStore.flatMap(_._2), perStore.map(_._1), IndexedSeq.empty)
  }

  private def bounds(predicates: Seq[Predicate]): Bounds =
    predicates.foldLeft(Bounds(None, None, None, None, None)) { (b, p) =>
      def points(values: Set[Long]) = b.copy(points = Some(b.points.fold(values)(_ intersect values)))
      p match {
        case AnyOf(branches) =>
          val branchPoints = branches.map(bounds(_).points)
          if (branchPoints.forall(_.isDefined)) points(branchPoints.flatMap(_.get).toSet) else b
        case Compare("commitLogOffset", Predicate.Eq, v: Long) => points(Set(v))
        case InSet("commitLogOffset", vs) => points(vs.collect { case v: Long => v }.toSet)
        case Compare("msgId", Predicate.Eq, v: String) => points(msgIdOffsets(Seq(v)))
        case InSet("msgId", vs) => points(msgIdOffsets(vs.collect { case v: String => v }))
        case Compare("commitLogOffset", op, v: Long) =>
          val (lo, hi) = range(op, v)
          b.copy(lo = tighter(b.lo, lo, math.max), hi = tighter(b.hi, hi, math.min))
        case Compare("storeTimestamp", op, v: Long) =>
          val (lo, hi) = if (op == Predicate.Eq) (Some(v), Some(v + 1)) else range(op, v)
          val begin = lo.map(us => Math.floorDiv(us + 999, 1000L)) // µs -> ms, inclusive
          val end = hi.map(us => Math.floorDiv(us + 999, 1000L) - 1) // exclusive µs -> inclusive ms
          b.copy(beginMs = tighter(b.beginMs, begin, math.max), endMs = tighter(b.endMs, end, math.min))
        case InSet("storeTimestamp", vs) =>
          val micros = vs.collect { case v: Long => v }
          val begin = Some(Math.floorDiv(micros.min + 999, 1000L))
          val end = Some(Math.floorDiv(micros.max + 1 + 999, 1000L) - 1)
          b.copy(beginMs = tighter(b.beginMs, begin, math.max), endMs = tighter(b.endMs, end, math.min))
        case _ => b
      }
    }

  /** [lo, hi) of a comparison on an integer-valued column. */
  private def range(op: Predicate.Op, v: Long): (Option[Long], Option[Long]) = op match {
    case Predicate.Lt => (None, Some(v))
    case Predicate.Le => (None, Some(v + 1))
    case Predicate.Gt => (Some(v + 1), None)
    case Predicate.Ge => (Some(v), None)
    case Predicate.Eq => (Some(v), Some(v + 1))
  }

  private def tighter(current: Option[Long], next: Option[Long], pick: (Long, Long) => Long): Option[Long] =
    (current, next) match {
      case (Some(a), Some(b)) => Some(pick(a, b))
      case (None, n) => n
      case (c, None) => c
    }

  /** Offsets named by offsetMsgIds; a value that is not one matches no record. */
  private def msgIdOffsets(values: Seq[String]): Set[Long] = values.flatMap(v => MsgId.decode(v).map(_._2)).toSet

  private def planStore(index: Int, store: Store, b: Bounds, settings: Settings): (String, Seq[ReadTask]) = {
    val ranges = logRanges(store, b)
    if (ranges.isEmpty || b.points.exists(_.isEmpty)) return ("empty", Seq.empty)
    b.points match {
      case Some(points) =>
        val offsets = points.filter(o => ranges.exists { case (lo, hi) => lo <= o && o < hi }).toArray.sorted
        ("offsets", offsetTasks(index, offsets, settings))
      case None =>
        val access = if (ranges == Seq((store.minOffset, store.logEnd))) "scan" else "range"
        (access, rangeTasks(index, store, ranges, settings))
    }
  }

  /** Commit-log byte ranges, in log order, allowed by the offset and time bounds. */
  private def logRanges(store: Store, b: Bounds): Seq[(Long, Long)] = {
    val lo = math.max(store.minOffset, b.lo.getOrElse(0L))
    val hi = math.min(store.logEnd, b.hi.getOrElse(store.logEnd))
    if (lo >= hi) Seq.empty
    else if (b.beginMs.isEmpty && b.endMs.isEmpty) Seq((lo, hi))
    else within(store.timeRanges(b.beginMs.getOrElse(Long.MinValue), b.endMs.getOrElse(Long.MaxValue)), lo, hi)
  }

  /** `ranges` clipped to [lo, hi). */
  private def within(ranges: Seq[(Long, Long)], lo: Long, hi: Long): Seq[(Long, Long)] =
    ranges.map { case (a, b) => (math.max(a, lo), math.min(b, hi)) }.filter { case (a, b) => a < b }

  /** Sorted offsets in few tasks: consecutive chunks, hence grouped by segment. */
  private def offsetTasks(index: Int, offsets: Array[Long], settings: Settings): Seq[ReadTask] =
    if (offsets.isEmpty) Seq.empty
    else {
      val wanted = math.max(settings.minPartitions.getOrElse(1), ceilDiv(offsets.length, OffsetsPerTask).toInt)
      val pieces = math.min(wanted, offsets.length)
      (0 until pieces).map { i =>
        OffsetsTask(
          index,
          offsets.slice(offsets.length * i / pieces, offsets.length * (i + 1) / pieces),
          userPoints = true
        )
      }
    }

  /** A task per piece of `Store.splitRanges` inside each of `ranges` (sorted, disjoint). */
  private def rangeTasks(index: Int, store: Store, ranges: Seq[(Long, Long)], settings: Settings): Seq[ReadTask] = {
    val total = ranges.map { case (lo, hi) => hi - lo }.sum
    val maxBytes = settings.minPartitions.fold(settings.maxBytesPerPartition) { n =>
      math.max(1L, math.min(settings.maxBytesPerPartition, ceilDiv(total, n)))
    }
    store.splitRanges(maxBytes).flatMap { case (start, end) =>
      within(ranges, start, end).map { case (s, e) => RangeTask(index, s, e) }
    }
  }

  private def ceilDiv(a: Long, b: Long): Long = -Math.floorDiv(-a, b)
}
