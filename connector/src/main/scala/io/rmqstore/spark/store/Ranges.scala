package io.rmqstore.spark.store

import scala.collection.mutable

/** Sorted, disjoint commit-log byte ranges [start, end): the model is python/rmqstore/store/ranges.py
  * `subtract_ranges`.
  */
object Ranges {

  /** `ranges` without `holes` (both sorted and disjoint). */
  def subtract(ranges: Seq[(Long, Long)], holes: IndexedSeq[(Long, Long)]): IndexedSeq[(Long, Long)] = {
    val out = mutable.ArrayBuffer.empty[(Long, Long)]
    var i = 0
    for ((s, end) <- ranges) {
      var start = s
      while (i < holes.length && holes(i)._2 <= start) i += 1
      var j = i
      while (j < holes.length && holes(j)._1 < end) {
        if (holes(j)._1 > start) out += ((start, holes(j)._1))
        start = math.max(start, holes(j)._2)
        j += 1
      }
      if (start < end) out += ((start, end))
    }
    out.toIndexedSeq
  }

  /** The union of `ranges` (any order, may overlap or touch), sorted and disjoint. */
  def union(ranges: Seq[(Long, Long)]): IndexedSeq[(Long, Long)] = {
    val merged = mutable.ArrayBuffer.empty[(Long, Long)]
    for ((start, end) <- ranges.sorted)
      if (merged.nonEmpty && start <= merged.last._2)
        merged(merged.length - 1) = (merged.last._1, math.max(merged.last._2, end))
      else merged += ((start, end))
    merged.toIndexedSeq
  }

  /** `ranges` clipped to [lo, hi). */
  def within(ranges: Seq[(Long, Long)], lo: Long, hi: Long): IndexedSeq[(Long, Long)] =
    ranges.iterator.map { case (a, b) => (math.max(a, lo), math.min(b, hi)) }.filter { case (a, b) => a < b }
      .toIndexedSeq

  /** Sorted offsets in [lo, hi) and outside every `exclude` range (sorted, disjoint). */
  def keep(offsets: Array[Long], lo: Long, hi: Long, exclude: IndexedSeq[(Long, Long)]): Array[Long] =
    offsets.filter { o =>
      o >= lo && o < hi && {
        // the last range starting at or before o
        var (l, h) = (0, exclude.length)
        while (l < h) { val m = (l + h) >>> 1; if (exclude(m)._1 <= o) l = m + 1 else h = m }
        l == 0 || o >= exclude(l - 1)._2
      }
    }
}
