package io.rmqstore.spark.plan

import io.rmqstore.spark.format.{MsgId, MultiDispatch}
import io.rmqstore.spark.store.{IndexUnavailableException, Ranges, Store, UnitDamage}

/** Predicates -> read tasks, per store: the JVM twin of python/rmqstore/plan/planner.py (design §3.1).
  *
  * Access paths, most selective first; the first one that applies is used and the others only bound it:
  * 1. `commitLogOffset` / `msgId` points (also an OR whose every branch has points): read those offsets.
  * 2. `key` / `uniqKey` values, or `KeysContainAny` (the `keys` option): index probe, planned here when
  *    there are at most `keyProbePartitionThreshold` values (the index files are mapped, §5.6 chain walk),
  *    else on the executors, split by `ProbeBucket`. `key = v` probes v's first KEYS token (a record whose
  *    whole KEYS string is v is indexed under each token) and is confirmed on the whole string. An OR whose
  *    every branch has points or probe values reads the union of its branches' offsets. A damaged index,
  *    or a log running far past the index's end, falls back to the next path and says so in `notes`.
  * 3. `topic` (with `queueId`, `queueOffset`, `tags`, queue windows): consume-queue slices, except where the
  *    selected records fill most of the log's bytes (`DenseShare`): those pieces are scanned.
  * Paths 2 and 3 also scan the records their index or queues cannot find, so they return the rows a scan
  * returns: path 3 the bytes no consume queue covers (`Store.uncoveredRanges`: transaction PREPARED /
  * ROLLBACK records, queues behind the log, topics without queue files) in range tasks, which the queue
  * tasks leave out (`exclude`); path 2 probes the side index of what the broker's index lacks
  * (`SideIndex`: ROLLBACK records, §5.4, the log past the index's end, lost index files) beside the
  * index, built and cached once (a note says so), as Python's `Store.index_candidates`. Queue windows
  * (startingOffsets / endingOffsets) are positions in the queues: they select queue units only.
  * 4. `commitLogOffset` ranges and `storeTimestamp` ranges: commit-log byte ranges (`Store.timeRanges`).
  * 5. Otherwise the whole log, its segment spans cut by `Split.splitSpans` (`maxBytesPerPartition`,
  *    `minPartitions`).
  * Index candidates are hash matches: the reader confirms every row of every task against all predicates.
  * Queue windows naming an `%LMQ%` queue always take path 3 (one row per queue unit read, §4.6).
  */
object ScanPlanner extends ContractPlan {
  val OffsetsPerTask = 200000
  val RangesPerTask = 10000
  val UnitsPerQueueTask = 1000000L

  /** `keyProbePartitionThreshold`: up to this many probe values are probed while planning, more on executors;
    * `denseShare`: `DenseShare` (tests of the queue path raise it).
    */
  final case class Settings(
      maxBytesPerPartition: Long,
      minPartitions: Option[Int],
      keyProbePartitionThreshold: Int,
      denseShare: Double = DenseShare
  )

  final val Uncovered =
    "not covered by consume queues (transaction PREPARED/ROLLBACK records, queues behind the log, " +
      "topics without queue files)"

  /** What a conjunction of predicates says about each plannable column. `probes`: (kind, values) in the
    * order met; `anyOf`: the branches of an OR whose every branch has points or probes.
    */
  private final case class Bounds(
      points: Option[Set[Long]] = None,
      lo: Option[Long] = None,
      hi: Option[Long] = None,
      beginMs: Option[Long] = None,
      endMs: Option[Long] = None,
      probes: Vector[(String, IndexedSeq[String])] = Vector.empty,
      topics: Option[Set[String]] = None,
      queueIds: Option[Set[Int]] = None,
      queueLo: Option[Long] = None,
      queueHi: Option[Long] = None,
      tags: Option[Set[String]] = None,
      windows: Option[IndexedSeq[QueueWindow]] = None,
      anyOf: Option[IndexedSeq[Bounds]] = None
  ) {
    def empty: Boolean = points.exists(_.isEmpty) || topics.exists(_.isEmpty) || queueIds.exists(_.isEmpty) ||
      tags.exists(_.isEmpty)

    /** The shorter of two value lists for the same probe kind (both are confirmed anyway). */
    def probe(kind: String, values: IndexedSeq[String]): Bounds = probes.indexWhere(_._1 == kind) match {
      case -1 => copy(probes = probes :+ (kind -> values))
      case i => if (values.size < probes(i)._2.size) copy(probes = probes.updated(i, kind -> values)) else this
    }
  }

  def plan(stores: IndexedSeq[Store], predicates: IndexedSeq[Seq[Predicate]], settings: Settings): ReadPlan = {
    val notes = Vector.newBuilder[String]
    val perStore = stores.indices.map { i =>
      val planned = planStore(i, stores(i), bounds(predicates(i)), settings, notes)
      // the one-time builds this plan paid for (python/rmqstore/plan/planner.py `plan_read`)
      notes ++= (stores(i).coverage.note ++ stores(i).timeline.note).map(n => s"store ${stores(i).root}: $n")
      planned
    }
    ReadPlan(perStore.flatMap(_._2), perStore.map(_._1), notes.result())
  }

  private def intersect[T](current: Option[Set[T]], values: Set[T]): Option[Set[T]] =
    Some(current.fold(values)(_ intersect values))

  private def bounds(predicates: Seq[Predicate]): Bounds =
    predicates.foldLeft(Bounds()) { (b, p) =>
      p match {
        case NotNull(_) => b
        case QueueWindows(ws) => b.copy(windows = Some(b.windows.fold(ws)(intersectWindows(_, ws))))
        case KeysContainAny(vs) => b.probe("keysContain", vs)
        case AnyOf(branches) =>
          val bs = branches.map(bounds)
          if (bs.forall(_.points.isDefined)) b.copy(points = intersect(b.points, bs.flatMap(_.points.get).toSet))
          else if (b.anyOf.isEmpty && bs.forall(x => x.points.isDefined || x.probes.nonEmpty)) b.copy(anyOf = Some(bs))
          else b
        case other => column(b, other)
      }
    }

  private def column(b: Bounds, p: Predicate): Bounds = {
    val (name, values) = p match {
      case InSet(c, vs) => (c, Some(vs))
      case Compare(c, Predicate.Eq, v) => (c, Some(IndexedSeq(v)))
      case Compare(c, _, _) => (c, None)
      case _ => return b
    }
    def longs = values.get.collect { case v: Long => v }
    def strings = values.get.collect { case v: String => v }
    (name, values) match {
      case ("commitLogOffset", Some(_)) => b.copy(points = intersect(b.points, longs.toSet))
      case ("commitLogOffset", None) =>
        val (lo, hi) = intRange(p)
        b.copy(lo = tighter(b.lo, lo, math.max), hi = tighter(b.hi, hi, math.min))
      case ("msgId", Some(_)) => b.copy(points = intersect(b.points, msgIdOffsets(strings)))
      case ("key", Some(_)) => b.probe("key", strings)
      case ("uniqKey", Some(_)) => b.probe("uniqKey", strings)
      case ("topic", Some(_)) => b.copy(topics = intersect(b.topics, strings.toSet))
      case ("tags", Some(_)) => b.copy(tags = intersect(b.tags, strings.toSet))
      case ("queueId", Some(_)) => b.copy(queueIds = intersect(b.queueIds, longs.map(_.toInt).toSet))
      case ("queueId", None) =>
        val (lo, hi) = intRange(p)
        val ids = (math.max(lo.getOrElse(0L), 0L) until math.min(hi.getOrElse(MaxQueueId), MaxQueueId)).map(_.toInt)
        b.copy(queueIds = intersect(b.queueIds, ids.toSet))
      case ("queueOffset", vs) =>
        val (lo, hi) = if (vs.isDefined) (Some(longs.min), Some(longs.max + 1)) else intRange(p)
        b.copy(queueLo = tighter(b.queueLo, lo, math.max), queueHi = tighter(b.queueHi, hi, math.min))
      case ("storeTimestamp", vs) =>
        val (lo, hi) = if (vs.isDefined) (Some(longs.min), Some(longs.max + 1)) else intRange(p)
        val begin = lo.map(us => Math.floorDiv(us + 999, 1000L)) // µs -> ms, inclusive
        val end = hi.map(us => Math.floorDiv(us + 999, 1000L) - 1) // exclusive µs -> inclusive ms
        b.copy(beginMs = tighter(b.beginMs, begin, math.max), endMs = tighter(b.endMs, end, math.min))
      case _ => b
    }
  }

  /** Queue ids a range on `queueId` can select: [0, 65536), like Python. */
  private val MaxQueueId = 1L << 16

  private def intersectWindows(a: IndexedSeq[QueueWindow], b: IndexedSeq[QueueWindow]): IndexedSeq[QueueWindow] = {
    val mine = a.map(w => (w.topic, w.queueId) -> w).toMap
    b.flatMap { w =>
      mine.get((w.topic, w.queueId)).collect {
        case m if math.max(m.start, w.start) < math.min(m.end, w.end) =>
          QueueWindow(w.topic, w.queueId, math.max(m.start, w.start), math.min(m.end, w.end))
      }
    }
  }

  /** [lo, hi) of a comparison on an integer-valued column. */
  private def intRange(p: Predicate): (Option[Long], Option[Long]) = p match {
    case Compare(_, op, v: Long) =>
      op match {
        case Predicate.Lt => (None, Some(v))
        case Predicate.Le => (None, Some(v + 1))
        case Predicate.Gt => (Some(v + 1), None)
        case Predicate.Ge => (Some(v), None)
        case Predicate.Eq => (Some(v), Some(v + 1))
      }
    case _ => (None, None)
  }

  private def tighter(current: Option[Long], next: Option[Long], pick: (Long, Long) => Long): Option[Long] =
    (current, next) match {
      case (Some(a), Some(b)) => Some(pick(a, b))
      case (None, n) => n
      case (c, None) => c
    }

  /** Offsets named by offsetMsgIds; a value that is not one matches no record. */
  private def msgIdOffsets(values: Seq[String]): Set[Long] = values.flatMap(v => MsgId.decode(v).map(_._2)).toSet

  private def planStore(
      index: Int,
      store: Store,
      b: Bounds,
      settings: Settings,
      notes: collection.mutable.Builder[String, Vector[String]]
  ): (String, Seq[ReadTask]) = {
    val ranges = logRanges(store, b)
    if (ranges.isEmpty || b.empty) return ("empty", Seq.empty)
    val (lo, hi) = (ranges.head._1, ranges.last._2)
    def inRanges(o: Long) = ranges.exists { case (a, z) => a <= o && o < z }
    if (b.windows.exists(_.exists(_.isLmq))) // one row per queue unit read, in every plan (§4.6)
      return ("queues", queueTasks(index, store, b, lo, hi, IndexedSeq.empty, settings))
    if (b.points.isDefined)
      return ("offsets", offsetTasks(index, b.points.get.filter(inRanges).toArray.sorted, settings, userPoints = true))
    val keyIndex = if (b.probes.nonEmpty) {
      val (kind, values) = b.probes.minBy(_._2.size)
      probeValues(kind, values) match {
        case None =>
          notes += s"store ${store.root}: $kind values ${values.take(3).mkString("[", ", ", "]")} cannot be looked up " +
            "in the index (empty or space-only); scanning instead"
          None
        case Some(probe) => keyIndexTasks(index, store, Seq(kind -> probe), Set.empty, b, lo, hi, settings, notes)
      }
    } else
      b.anyOf.flatMap { branches =>
        val probes = branches.flatMap(x => if (x.points.isDefined) None else Some(x.probes.minBy(_._2.size)))
        val checked = probes.map { case (kind, values) => kind -> probeValues(kind, values) }
        val points = branches.flatMap(_.points.getOrElse(Set.empty)).filter(inRanges).toSet
        if (checked.exists(_._2.isEmpty)) None
        else if (probes.isEmpty) Some(offsetTasks(index, points.toArray.sorted, settings, userPoints = true))
        else keyIndexTasks(index, store, checked.map { case (k, v) => k -> v.get }, points, b, lo, hi, settings, notes)
      }
    if (keyIndex.isDefined) return ("key-index", keyIndex.get)
    if (b.windows.isDefined) return ("queues", queueTasks(index, store, b, lo, hi, IndexedSeq.empty, settings))
    if (b.topics.isDefined) return topicPlan(index, store, b, lo, hi, settings, notes)
    val access = if (ranges == Seq((store.minOffset, store.logEnd))) "scan" else "range"
    (access, rangeTasks(index, store, ranges, settings))
  }

  /** Consume-queue slices cut along the scan's pieces (`rangePieces`, grouped by `pieceGroups`), except
    * pieces where the selection is dense (`DenseShare`): those are scanned (the reader confirms every row),
    * and so are the bytes no queue covers that may hold a record of the topics (`Store.uncoveredRangesOf`); each
    * queue task reads only its pieces' bytes and leaves the uncovered ones out. "scan" (or "range") when every
    * selected record lies in dense pieces. As Python's `_topic_plan` (local stores).
    */
  private def topicPlan(
      index: Int,
      store: Store,
      b: Bounds,
      lo: Long,
      hi: Long,
      settings: Settings,
      notes: collection.mutable.Builder[String, Vector[String]]
  ): (String, Seq[ReadTask]) = {
    val pieces = rangePieces(store, Seq((lo, hi)), settings).toIndexedSeq
    val starts = pieces.map(_._1).toArray
    val selected = new Array[Double](pieces.length)
    val tags = b.tags.map(_.toSeq.sorted)
    val slices = topicSlices(store, b)
    // per slice, its selected units pointing into [lo, hi): (queue offsets, physical offsets)
    val units = slices.map { s =>
      val chosen = store.queueSelection(s.topic, s.queueId, s.start, s.end, tags)
        .filter(u => u.phyOffset >= lo && u.phyOffset < hi).toArray
      for (u <- chosen) {
        val owner = java.util.Arrays.binarySearch(starts, u.phyOffset) match {
          case found if found >= 0 => found
          case missing => -missing - 2
        }
        if (owner >= 0 && u.phyOffset < pieces(owner)._2) selected(owner) += u.size
      }
      (chosen.map(_.queueOffset), chosen.map(_.phyOffset))
    }
    val isDense = pieces.indices.map(i => selected(i) >= settings.denseShare * (pieces(i)._2 - pieces(i)._1))
    val dense = Ranges.union(pieces.indices.filter(isDense).map(pieces))
    val uncovered = Ranges.within(store.uncoveredRanges, lo, hi)
    val holding = Ranges.within(store.uncoveredRangesOf(b.topics.get), lo, hi)
    if (dense.nonEmpty)
      notes += s"store ${store.root}: the selection fills >= ${(settings.denseShare * 100).round}% of the bytes of " +
        s"${pieces.indices.count(isDense)} commit-log range(s), ${dense.map(r => r._2 - r._1).sum} bytes: scanned " +
        s"instead of read by offset: ${dense.take(3).mkString("[", ", ", "]")}"
    val queued = pieceGroups(pieces, selected, isDense).map { case (a, z) =>
      QueueSliceTask(
        index,
        slicesWithin(slices, units, a, z),
        tags,
        a,
        z,
        Ranges.within(uncovered, a, z),
        coverage = true
      )
    }
    val tasks = rangeTasks(index, store, dense, settings) ++ queued ++
      scanTasks(index, store, Ranges.subtract(holding, dense), settings, notes, Uncovered)
    val access =
      if (queued.nonEmpty || dense.isEmpty) "queues"
      else if (dense == Seq((store.minOffset, store.logEnd))) "scan"
      else "range"
    (access, tasks)
  }

  /** Ranges of consecutive pieces with selected records, none dense, each closed once its selected bytes
    * reach `MinQueueTaskBytes` (or at a dense piece): python/rmqstore/plan/planner.py `_piece_groups`.
    */
  private def pieceGroups(
      pieces: IndexedSeq[(Long, Long)],
      selected: Array[Double],
      isDense: IndexedSeq[Boolean]
  ): IndexedSeq[(Long, Long)] = {
    val runs = IndexedSeq.newBuilder[IndexedSeq[Int]] // the pieces with selected records between dense ones
    var run = Vector.empty[Int]
    for (i <- pieces.indices) {
      if (isDense(i)) { runs += run; run = Vector.empty }
      else if (selected(i) > 0) run :+= i
    }
    runs += run
    runs.result().flatMap { run =>
      Split.groupItems(run.map(selected(_)), atLeast = Some(MinQueueTaskBytes.toDouble)).map { g =>
        (pieces(run(g.head))._1, pieces(run(g.last))._2)
      }
    }
  }

  /** The parts of the slices whose selected units point into [lo, hi): found by bisection where a queue's
    * physical offsets ascend (as the broker writes them), else the whole slice (the task's bounds still keep
    * only [lo, hi)); python/rmqstore/plan/planner.py `_slices_within`.
    */
  private def slicesWithin(
      slices: IndexedSeq[QueueSlice],
      units: IndexedSeq[(Array[Long], Array[Long])],
      lo: Long,
      hi: Long
  ): IndexedSeq[QueueSlice] = slices.zip(units).flatMap { case (s, (queueOffsets, phy)) =>
    if (phy.indices.drop(1).exists(i => phy(i) <= phy(i - 1))) Some(s)
    else {
      val (first, last) = (lowerBound(phy, lo), lowerBound(phy, hi))
      if (first < last) Some(QueueSlice(s.topic, s.queueId, queueOffsets(first), queueOffsets(last - 1) + 1))
      else None
    }
  }

  /** The first index of sorted `values` holding a value >= `v`. */
  private def lowerBound(values: Array[Long], v: Long): Int = {
    var (l, h) = (0, values.length)
    while (l < h) { val m = (l + h) >>> 1; if (values(m) < v) l = m + 1 else h = m }
    l
  }

  /** Commit-log byte ranges, in log order, allowed by the offset and time bounds (`Store.timeRanges`: one
    * range unless the broker clock stepped back); the other paths are bounded by the first and last.
    */
  private def logRanges(store: Store, b: Bounds): Seq[(Long, Long)] = {
    val lo = math.max(store.minOffset, b.lo.getOrElse(0L))
    val hi = math.min(store.logEnd, b.hi.getOrElse(store.logEnd))
    if (lo >= hi) Seq.empty
    else if (b.beginMs.isEmpty && b.endMs.isEmpty) Seq((lo, hi))
    else Ranges.within(store.timeRanges(b.beginMs.getOrElse(Long.MinValue), b.endMs.getOrElse(Long.MaxValue)), lo, hi)
  }

  /** Index keys to probe; None when some value cannot be found through the index. */
  private def probeValues(kind: String, values: IndexedSeq[String]): Option[IndexedSeq[String]] =
    if (kind != "key") Some(values).filter(_.forall(v => v.nonEmpty && !v.contains(" ")))
    else {
      val tokens = values.map(_.split(" ").find(_.nonEmpty))
      if (tokens.exists(_.isEmpty)) None else Some(tokens.map(_.get).distinct) // an all-space KEYS is not indexed
    }

  /** Index probes of `probes` (kind -> values, their offsets united with `points`), on the driver or, for
    * many values of one kind, on executors; each probe also probes the side index of what the index lacks
    * (`SideIndex.forLookup`, built here when needed).
    * None (and a note) when the index cannot answer.
    */
  private def keyIndexTasks(
      index: Int,
      store: Store,
      probes: Seq[(String, IndexedSeq[String])],
      points: Set[Long],
      b: Bounds,
      lo: Long,
      hi: Long,
      settings: Settings,
      notes: collection.mutable.Builder[String, Vector[String]]
  ): Option[Seq[ReadTask]] = {
    val kinds = probes.map(_._1).distinct.mkString("/")
    // the side index of what the broker's index lacks (ROLLBACK records, the log past its end, lost index
    // files): built here, once, before executors probe it
    val lookup =
      try store.sideIndex.forLookup()
      catch {
        case e: IndexUnavailableException =>
          notes += s"store ${store.root}: index cannot answer the $kinds lookup (${e.getMessage}); scanning instead"
          return None
      }
    val lacking = lookup.lacking
    lookup.side.note.foreach(n => notes += s"store ${store.root}: $n")
    // without a topic predicate, every topic that can have indexed records
    val topics = b.topics.fold(lookup.topics.toIndexedSeq)(_.toIndexedSeq.sorted)
    val probeTasks = probes match {
      case Seq((kind, values)) if values.size > settings.keyProbePartitionThreshold && points.isEmpty =>
        val buckets =
          Split.taskCount(values.size, settings.keyProbePartitionThreshold, settings.minPartitions).toInt
        val grouped = values.groupBy(v => ProbeBucket(v, buckets))
        (0 until buckets).filter(grouped.contains).map { i =>
          KeyProbeTask(index, kind, grouped(i), i, buckets, values.toSet, topics, lo, hi, lacking)
        }
      case _ =>
        val found = store.indexLookup(topics, probes.flatMap(_._2).distinct, lacking) ++ points
        offsetTasks(index, found.distinct.sorted.filter(o => o >= lo && o < hi), settings)
    }
    Some(probeTasks)
  }

  /** A note that `ranges` (the bytes `what` describes) are read `how`. */
  private def scanNote(store: Store, ranges: Seq[(Long, Long)], what: String, how: String): String =
    s"store ${store.root}: ${ranges.size} commit-log range(s), ${ranges.map(r => r._2 - r._1).sum} bytes, $what, " +
      s"are scanned $how too: ${ranges.take(3).mkString("[", ", ", "]")}"

  /** `RangesTask`s over `ranges` (the bytes `what` describes): about `maxBytesPerPartition` bytes and at
    * most `RangesPerTask` ranges each.
    */
  private def scanTasks(
      index: Int,
      store: Store,
      ranges: IndexedSeq[(Long, Long)],
      settings: Settings,
      notes: collection.mutable.Builder[String, Vector[String]],
      what: String
  ): Seq[ReadTask] = {
    if (ranges.isEmpty) return Seq.empty
    notes += scanNote(store, ranges, what, "by range tasks")
    Split.packRanges(ranges, settings.maxBytesPerPartition, Some(RangesPerTask)).map { group =>
      RangesTask(index, group.map { case (_, start, end) => (start, end) })
    }
  }

  /** Sorted offsets in few tasks: consecutive chunks, hence grouped by segment. */
  private def offsetTasks(index: Int, offsets: Array[Long], settings: Settings, userPoints: Boolean = false)
      : Seq[ReadTask] =
    Split.splitOffsets(offsets, OffsetsPerTask, settings.minPartitions).map(OffsetsTask(index, _, userPoints))

  /** A task per piece of `rangePieces`. */
  private def rangeTasks(index: Int, store: Store, ranges: Seq[(Long, Long)], settings: Settings): Seq[ReadTask] =
    rangePieces(store, ranges, settings).map { case (s, e) => RangeTask(index, s, e) }

  /** `ranges` (sorted, disjoint) cut like a scan's tasks: `Split.splitSpans` of the segment spans (never across
    * segments, at most `maxBytesPerPartition`, at least `minPartitions` of them).
    */
  private def rangePieces(store: Store, ranges: Seq[(Long, Long)], settings: Settings): Seq[(Long, Long)] = {
    val total = ranges.map { case (lo, hi) => hi - lo }.sum
    val maxBytes = Split.taskSize(total, settings.maxBytesPerPartition, settings.minPartitions)
    Split.splitSpans(store.segmentSpans, maxBytes).flatMap { case (start, end) => Ranges.within(ranges, start, end) }
  }

  /** The slices of `topicSlices`, packed into tasks of at most `UnitsPerQueueTask` units (`Split.packRanges`), an
    * LMQ queue's slices in tasks of their own (`readingGroups`); the units lost past a queue's end go with the
    * task reading up to it (docs/damage.md §3).
    */
  private def queueTasks(
      index: Int,
      store: Store,
      b: Bounds,
      lo: Long,
      hi: Long,
      exclude: IndexedSeq[(Long, Long)],
      settings: Settings
  ): Seq[ReadTask] = {
    val clipped = topicSlices(store, b)
    val unitsPerTask = Split.taskSize(clipped.map(s => s.end - s.start).sum, UnitsPerQueueTask, settings.minPartitions)
    val tags = b.tags.map(_.toSeq.sorted)
    readingGroups(clipped)(_.topic).flatMap { slices =>
      Split.packRanges(slices.map(s => (s.start, s.end)), unitsPerTask).map { group =>
        val packed = group.map { case (i, a, z) => QueueSlice(slices(i).topic, slices(i).queueId, a, z) }
        QueueSliceTask(index, packed, tags, lo, hi, exclude, lost = lostAtEnds(store, packed))
      }
    }
  }

  /** The units lost past the end of the queues of the slices that reach it (`Store.lostAtEnd`, docs/damage.md
    * §3): what a read taking rows from the units alone would silently miss. An `%LMQ%` queue's records carry
    * their own topic (§4.6), so none is ever found there: not looked for (python/rmqstore/plan/queues.py
    * `lost_at_ends`).
    */
  def lostAtEnds(store: Store, slices: Seq[QueueSlice]): Seq[UnitDamage] =
    slices.filter(s => !s.topic.startsWith(MultiDispatch.LmqPrefix) && s.end == store.queueRange(s.topic, s.queueId)._2)
      .flatMap(s => store.lostAtEnd(s.topic, s.queueId))

  /** The items (queue slices) that may share a read task: those of ordinary queues together, and each
    * `%LMQ%` queue's alone. A task reads a record once however many of its slices point at it; a record in an
    * LMQ queue is in its own topic's queue (and maybe other LMQ queues) too, so this keeps one row per queue
    * unit read, in every plan (§4.6); python/rmqstore/plan/queues.py `reading_groups`.
    */
  def readingGroups[T](items: IndexedSeq[T])(topic: T => String): IndexedSeq[IndexedSeq[T]] =
    items.groupBy(i => if (topic(i).startsWith(MultiDispatch.LmqPrefix)) topic(i) else "").toIndexedSeq
      .sortBy(_._1).map(_._2)

  /** The queue slices a topic or queue-window plan reads (windows, or every queue of the topics), clipped to
    * the queue-offset bounds and the queues' files.
    */
  private def topicSlices(store: Store, b: Bounds): IndexedSeq[QueueSlice] = {
    val slices = b.windows match {
      case Some(ws) => // an LMQ queue's rows show their own topic and queue (§4.6)
        ws.filter(w => w.isLmq || (b.topics.forall(_.contains(w.topic)) && b.queueIds.forall(_.contains(w.queueId))))
          .map(w => QueueSlice(w.topic, w.queueId, w.start, w.end))
      case None =>
        val known = store.topics.toSet
        for {
          topic <- b.topics.get.toIndexedSeq.sorted if known.contains(topic)
          queueId <- store.queueIds(topic) if b.queueIds.forall(_.contains(queueId))
        } yield {
          val (first, last) = store.queueRange(topic, queueId)
          QueueSlice(topic, queueId, first, last)
        }
    }
    slices.flatMap { s =>
      val lmq = s.topic.startsWith(MultiDispatch.LmqPrefix)
      val start = b.queueLo.filterNot(_ => lmq).fold(s.start)(math.max(s.start, _))
      val end = b.queueHi.filterNot(_ => lmq).fold(s.end)(math.min(s.end, _))
      store.queueSpans(s.topic, s.queueId, start, end).map { case (a, z) => QueueSlice(s.topic, s.queueId, a, z) }
    }
  }

}
