package io.rmqstore.spark.plan

import java.nio.charset.StandardCharsets.UTF_8

import io.rmqstore.spark.store.UnitDamage
import org.apache.commons.codec.digest.MurmurHash3

/** The serializable units of work of a plan (one per Spark partition), as python/rmqstore/plan/tasks.py.
  * `storeIndex` indexes the read's store paths. `lo`/`hi` bound the commit-log offsets a task may return
  * ([lo, hi)); `exclude` lists byte ranges [start, end) (sorted, disjoint) a queue task leaves out
  * because the plan scans them in a `RangesTask` (bytes consume queues do not cover): each record is
  * read by one task only.
  */
sealed trait ReadTask extends Serializable { def storeIndex: Int }

/** Scan the commit log over [start, end): the records starting in it (start is resynced to a record). */
final case class RangeTask(storeIndex: Int, start: Long, end: Long) extends ReadTask

/** Scan several commit-log byte ranges [start, end), ascending. */
final case class RangesTask(storeIndex: Int, ranges: IndexedSeq[(Long, Long)]) extends ReadTask

/** Read the records at these physical offsets (ascending). `userPoints`: the query named them (msgId /
  * commitLogOffset values), so they may not be record starts and such offsets give no row; offsets the
  * store named (index entries, consume-queue units) that hold no valid record are damage (docs/damage.md
  * §3, §4).
  */
final case class OffsetsTask(storeIndex: Int, offsets: Array[Long], userPoints: Boolean = false) extends ReadTask

/** Probe the index for `values` on the executor, then read the candidates. The probe values of a read are
  * spread over `buckets` tasks by `ProbeBucket`; a record matching values of several buckets is returned
  * only by its owner, the bucket of its smallest matching token among `allValues`, so no row is read
  * twice. `kind`: "key", "uniqKey" or "keysContain" (the token a record is owned by: a KEYS token, or
  * its UNIQ_KEY). `lacking`: the byte ranges whose records the index lacks (`Store.lackingRanges`), whose
  * side index the lookup probes (from the cache the planner filled).
  */
final case class KeyProbeTask(
    storeIndex: Int,
    kind: String,
    values: IndexedSeq[String],
    bucket: Int,
    buckets: Int,
    allValues: Set[String],
    topics: IndexedSeq[String],
    lo: Long,
    hi: Long,
    lacking: IndexedSeq[(Long, Long)]
) extends ReadTask

/** Units [start, end) of one consume queue. */
final case class QueueSlice(topic: String, queueId: Int, start: Long, end: Long)

/** Read the records these consume-queue slices point to (tagsCode-prefiltered with `tags`); a damaged unit is
  * damage (docs/damage.md §3) unless `coverage`: the plan scans the bytes no unit covers, its record among them
  * (a batch topic plan; python/rmqstore/plan/tasks.py `QueueSliceTask`). `lost`: the units lost past the end of
  * queues whose last slice is this task's (found while planning, `ScanPlanner.lostAtEnds`), damage it reports as
  * it reports a damaged unit.
  */
final case class QueueSliceTask(
    storeIndex: Int,
    slices: IndexedSeq[QueueSlice],
    tags: Option[Seq[String]],
    lo: Long,
    hi: Long,
    exclude: IndexedSeq[(Long, Long)],
    coverage: Boolean = false,
    lost: Seq[UnitDamage] = Nil
) extends ReadTask

/** The tasks of one read and how they were chosen: per store the access path ("offsets", "key-index",
  * "queues", "range", "scan", "empty"), and notes worth a log line (fallbacks, ranges scanned too).
  */
final case class ReadPlan(tasks: IndexedSeq[ReadTask], access: IndexedSeq[String], notes: IndexedSeq[String])

/** The stable bucket of a probe value: MurmurHash3 x86_32 (seed 0) of its UTF-8 bytes, unsigned, modulo
  * the bucket count; the same function as python/rmqstore/plan/tasks.py `probe_bucket` (mmh3.hash with
  * signed=False), so both engines split the values of a large IN list the same way. The hash is
  * commons-codec's `hash32x86` (in Spark's jars; not the deprecated `hash32`, which sign-extends tail bytes).
  */
object ProbeBucket {
  def apply(value: String, buckets: Int): Int =
    java.lang.Long
      .remainderUnsigned(Integer.toUnsignedLong(MurmurHash3.hash32x86(value.getBytes(UTF_8))), buckets.toLong)
      .toInt
}
