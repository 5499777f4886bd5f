package io.rmqstore.spark.plan

/** The one pure splitter that cuts work into tasks (ranges, sorted offsets, weighted items; no I/O): the
  * JVM twin of the splitter in python/rmqstore/plan/tasks.py, with the same outputs for the same inputs
  * (tests/plan/split_vectors.json, read by both engines' tests), so both engines plan the same tasks.
  */
object Split {

  /** Tasks for `total` units at most `perTask` each, and at least `minTasks` (at least 1). */
  def taskCount(total: Long, perTask: Long, minTasks: Option[Int] = None): Long =
    math.max(minTasks.filter(_ > 0).getOrElse(1).toLong, ceilDiv(total, perTask))

  /** The size of a task: at most `maxSize`, small enough that `total` makes `minTasks` tasks, >= 1. */
  def taskSize(total: Long, maxSize: Long, minTasks: Option[Int] = None): Long = minTasks match {
    case Some(n) if n > 0 && total > 0 => math.max(1L, math.min(maxSize, ceilDiv(total, n)))
    case _ => maxSize
  }

  /** [lo, hi) cut into `pieces` consecutive ranges whose lengths differ by at most one. */
  def evenCuts(lo: Long, hi: Long, pieces: Long): IndexedSeq[(Long, Long)] = {
    val bounds = (0L until pieces).map(i => lo + (BigInt(hi - lo) * i / pieces).toLong) :+ hi
    bounds.zip(bounds.tail)
  }

  /** Each span [start, end) (a piece never crosses spans, e.g. segments) cut into the fewest nearly equal
    * pieces of at most `maxSize`; empty spans give none.
    */
  def splitSpans(spans: Seq[(Long, Long)], maxSize: Long): IndexedSeq[(Long, Long)] = {
    if (maxSize <= 0) throw new IllegalArgumentException(s"max_size must be positive, got $maxSize")
    spans.toIndexedSeq.collect { case (lo, hi) if lo < hi => evenCuts(lo, hi, ceilDiv(hi - lo, maxSize)) }.flatten
  }

  /** [lo, hi) cut at the multiples of `step` (e.g. segment boundaries of a log of `step`-byte segments). */
  def gridSpans(lo: Long, hi: Long, step: Long): IndexedSeq[(Long, Long)] =
    if (lo >= hi) IndexedSeq.empty
    else {
      val bounds =
        (lo +: Iterator.iterate(lo - Math.floorMod(lo, step) + step)(_ + step).takeWhile(_ < hi).toIndexedSeq) :+ hi
      bounds.zip(bounds.tail)
    }

  /** Sorted offsets cut into consecutive chunks (hence grouped by segment): `taskCount` of them, at most one
    * per offset, sizes differing by at most one.
    */
  def splitOffsets(offsets: Array[Long], perTask: Long, minTasks: Option[Int] = None): IndexedSeq[Array[Long]] =
    if (offsets.isEmpty) IndexedSeq.empty
    else {
      val pieces = math.min(taskCount(offsets.length.toLong, perTask, minTasks), offsets.length.toLong)
      evenCuts(0, offsets.length, pieces).map { case (a, b) => offsets.slice(a.toInt, b.toInt) }
    }

  /** Ranges [start, end) packed in order into tasks of `capacity` total length and at most `maxRanges`
    * pieces: a range is cut where a task fills up. Per task, its pieces as (index into `ranges`, start, end).
    */
  def packRanges(
      ranges: Seq[(Long, Long)],
      capacity: Long,
      maxRanges: Option[Int] = None
  ): IndexedSeq[IndexedSeq[(Int, Long, Long)]] = {
    val tasks = IndexedSeq.newBuilder[IndexedSeq[(Int, Long, Long)]]
    var group = Vector.empty[(Int, Long, Long)]
    var held = 0L
    for (((s, end), index) <- ranges.zipWithIndex) {
      var start = s
      while (start < end) {
        val piece = math.min(end, start + capacity - held)
        group :+= ((index, start, piece))
        held += piece - start
        start = piece
        if (held >= capacity || maxRanges.exists(group.size >= _)) {
          tasks += group
          group = Vector.empty
          held = 0
        }
      }
    }
    if (group.nonEmpty) tasks += group
    tasks.result()
  }

  /** Indexes of whole items grouped in order: a group is closed once its weight reaches `atLeast`, or before
    * an item that would take it past `atMost` (a heavier item still gets a group).
    */
  def groupItems(
      weights: Seq[Double],
      atLeast: Option[Double] = None,
      atMost: Option[Double] = None
  ): IndexedSeq[IndexedSeq[Int]] = {
    val groups = IndexedSeq.newBuilder[IndexedSeq[Int]]
    var group = Vector.empty[Int]
    var held = 0.0
    for ((weight, index) <- weights.zipWithIndex) {
      if (group.nonEmpty && atMost.exists(held + weight > _)) {
        groups += group
        group = Vector.empty
        held = 0.0
      }
      group :+= index
      held += weight
      if (atLeast.exists(held >= _)) {
        groups += group
        group = Vector.empty
        held = 0.0
      }
    }
    if (group.nonEmpty) groups += group
    groups.result()
  }

  private def ceilDiv(a: Long, b: Long): Long = -Math.floorDiv(-a, b)
}
