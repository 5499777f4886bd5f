package io.rmqstore.spark.plan

import io.rmqstore.spark.format.{Layout, MultiDispatch, RecordView}

/** Exact evaluation of predicates on one decoded record (the confirmation step, design §3.1), as
  * python/rmqstore/plan/confirm.py does on batches. Index hashes collide and index times are whole
  * seconds, so every candidate is checked against every consumed predicate with SQL semantics (a null
  * never matches).
  */
object Confirm {

  /** The value a predicate compares for `column`: String, Long (ints widened; timestamps in epoch µs)
    * or null.
    */
  def value(record: RecordView, column: String): Any = column match {
    case "topic" => record.topic
    case "queueId" => record.queueId.toLong
    case "queueOffset" => record.queueOffset
    case "commitLogOffset" => record.physicalOffset
    case "msgId" => record.msgId
    case "uniqKey" => record.uniqKey
    case "key" => record.key
    case "tags" => record.tags
    case "storeTimestamp" => record.storeTimestampMs * 1000L
    case other => throw new IllegalArgumentException(s"rmqstore: no predicate on column $other")
  }

  def matches(record: RecordView, predicates: Seq[Predicate]): Boolean = predicates.forall(matches(record, _))

  def matches(record: RecordView, predicate: Predicate): Boolean = predicate match {
    case NotNull(column) => value(record, column) != null
    case InSet(column, values) =>
      val v = value(record, column)
      v != null && values.contains(v)
    case Compare(column, op, expected) =>
      val v = value(record, column)
      v != null && compare(v, expected, op)
    case KeysContainAny(values) =>
      val keys = record.keys
      keys != null && keys.exists(values.contains)
    case QueueWindows(windows) =>
      val (topic, queueId, offset) = (record.topic, record.queueId, record.queueOffset)
      Layout.isQueued(record.sysFlag) &&
      (windows.exists(w => w.topic == topic && w.queueId == queueId && offset >= w.start && offset < w.end) ||
        inLmqWindows(record, windows.filter(_.isLmq)))
    case AnyOf(branches) => branches.exists(b => matches(record, b))
  }

  /** The record's multi-dispatch properties put it in one of the LMQ `windows` (§4.6). */
  private def inLmqWindows(record: RecordView, windows: IndexedSeq[QueueWindow]): Boolean =
    windows.nonEmpty && MultiDispatch.queues(record.topic, record.properties, record.queueId).exists {
      case ((name, id), offset) =>
        windows.exists(w => w.topic == name && w.queueId == id && offset >= w.start && offset < w.end)
    }

  /** `actual op expected` for Long or String values (Spark's string order), false for other types. */
  private[spark] def compare(actual: Any, expected: Any, op: Predicate.Op): Boolean = {
    val c = (actual, expected) match {
      case (a: Long, b: Long) => java.lang.Long.compare(a, b)
      case (a: String, b: String) => compareUtf8(a, b)
      case _ => return false
    }
    op match {
      case Predicate.Eq => c == 0
      case Predicate.Lt => c < 0
      case Predicate.Le => c <= 0
      case Predicate.Gt => c > 0
      case Predicate.Ge => c >= 0
    }
  }

  /** Spark orders strings by their UTF-8 bytes (UTF8String.compareTo), which differs from
    * String.compareTo for characters outside the BMP: compare by code points, which orders like UTF-8.
    */
  private def compareUtf8(a: String, b: String): Int = {
    var i = 0
    var j = 0
    while (i < a.length && j < b.length) {
      val x = a.codePointAt(i)
      val y = b.codePointAt(j)
      if (x != y) return Integer.compare(x, y)
      i += Character.charCount(x)
      j += Character.charCount(y)
    }
    Integer.compare(a.length - i, b.length - j)
  }
}
