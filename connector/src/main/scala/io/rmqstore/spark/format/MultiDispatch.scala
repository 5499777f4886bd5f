package io.rmqstore.spark.format

/** Multi-dispatch and light message queues (docs/format.md §4.6), as python/rmqstore/format/record.py
  * `dispatched_queues`.
  */
object MultiDispatch {

  /** Queue names of light message queues (`MixAll.LMQ_PREFIX`). */
  final val LmqPrefix = "%LMQ%"

  /** The queues, `,`-separated, a record is also dispatched to. */
  final val Queues = "INNER_MULTI_DISPATCH"

  /** The record's queue offset in each of those queues, in the same order. */
  final val QueueOffsets = "INNER_MULTI_QUEUE_OFFSET"

  /** Topic prefixes `MultiDispatchUtils.isNeedHandleMultiDispatch` never multi-dispatches. */
  final val Skipped = Seq("%RETRY%", "rmq_sys_", "SCHEDULE_TOPIC_XXXX")

  /** ((queue name, queue id), queue offset) of each queue a record of `topic` with these properties went to:
    * an `%LMQ%` queue's id is 0, another's the record's own `queueId`; names with a path separator are
    * skipped, lists of different lengths dispatch nothing (`ConsumeQueue.multiDispatchLmqQueue`), and
    * offsets that are not numbers (the broker writes them) are read as no dispatch.
    */
  def queues(topic: String, properties: java.util.Map[String, String], queueId: Int): Seq[((String, Int), Long)] = {
    val names = properties.get(Queues)
    val offsets = properties.get(QueueOffsets)
    if (
      names == null || offsets == null || names.trim.isEmpty || offsets.trim.isEmpty || Skipped.exists(topic.startsWith)
    )
      return Nil
    val (ns, os) = (names.split(",", -1), offsets.split(",", -1))
    if (ns.length != os.length || !os.forall(o => scala.util.Try(o.toLong).isSuccess)) return Nil
    ns.toSeq.zip(os.map(_.toLong)).collect {
      case (name, offset) if !name.contains('/') && !name.contains('\\') =>
        ((name, if (name.startsWith(LmqPrefix)) 0 else queueId), offset)
    }
  }
}
