package io.rmqstore.spark.plan

/** The serializable units of work of a plan (one per Spark partition), as python/rmqstore/plan/tasks.py.
  * `store` indexes the read's store paths.
  */
sealed trait ReadTask extends Serializable { def store: Int }

/** Scan the commit log over [start, end): the records starting in it (start is a record start). */
final case class RangeTask(store: Int, start: Long, end: Long) extends ReadTask

/** Read the records at these physical offsets (ascending). `userPoints`: the offsets come from the
  * query (msgId / commitLogOffset values) and may not be record starts; such offsets give no row.
  */
final case class OffsetsTask(store: Int, offsets: Array[Long], userPoints: Boolean) extends ReadTask

/** The tasks of one read and how they were chosen: per store the access path ("offsets", "range",
  * "scan", "empty"), and notes worth a log line.
  */
final case class ReadPlan(tasks: IndexedSeq[ReadTask], access: IndexedSeq[String], notes: IndexedSeq[String])
