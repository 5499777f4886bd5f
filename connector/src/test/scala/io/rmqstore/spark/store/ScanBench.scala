package io.rmqstore.spark.store

import io.rmqstore.spark.format.RecordView

/** Full-scan decode throughput with every column touched, the JVM twin of `rmqstore bench`:
  * `.ci/sbt "connector/Test/runMain io.rmqstore.spark.store.ScanBench <store> [rounds [bytes|strings]]"`.
  * Mode "bytes" copies string columns as UTF-8 bytes (what a columnar reader does), "strings" builds
  * Java strings and the properties map.
  */
object ScanBench {
  private val threads = java.lang.management.ManagementFactory.getThreadMXBean
  private val scratch = new Array[Byte](1 << 20)
  private val keySpans = new Array[Int](1 << 16)

  private def copy(v: RecordView, at: Int, len: Int): Long = {
    v.buffer.get(at, scratch, 0, len)
    len
  }

  private def bytes(v: RecordView): Long = {
    var sink = copy(v, v.topicPosition, v.topicLength) + v.queueId + v.queueOffset + v.physicalOffset + v.totalSize
    sink += v.msgIdBytes(scratch, 0) + Option(v.uniqKey).map(_.length).getOrElse(0) + v.keyTokenSpans(keySpans)
    sink += Option(v.tags).map(_.length).getOrElse(0) + v.bodyCrc + v.flag + v.sysFlag + v.bornTimestampMs
    sink += (if ((v.sysFlag & 1) != 0) v.body(decompress = true).length else copy(v, v.bodyPosition, v.bodyLength))
    sink += v.storeTimestampMs + v.bornHostBytes(scratch, 0) + v.storeHostBytes(scratch, 0) + v.reconsumeTimes
    sink += v.preparedTransactionOffset
    val n = v.propertyCount
    val spans = v.propertySpans
    var i = 0
    while (i < n) {
      sink += spans(4 * i + 1) + spans(4 * i + 3)
      i += 1
    }
    sink
  }

  private def strings(v: RecordView): Long =
    v.topic.length + v.queueId + v.queueOffset + v.physicalOffset + v.totalSize + v.msgId.length +
      Option(v.uniqKey).map(_.length).getOrElse(0) + Option(v.keys).map(_.length).getOrElse(0) +
      Option(v.tags).map(_.length).getOrElse(0) + v.body(decompress = true).length + v.bodyCrc + v.flag + v.sysFlag +
      v.bornTimestampMs + v.storeTimestampMs + v.bornHost.length + v.storeHost.length + v.reconsumeTimes +
      v.preparedTransactionOffset + v.properties.size

  def main(args: Array[String]): Unit = {
    val rounds = if (args.length > 1) args(1).toInt else 3
    val modes = Seq[(String, RecordView => Long)]("bytes" -> bytes, "strings" -> strings)
    val only = if (args.length > 2) modes.filter(_._1 == args(2)) else modes
    for (round <- 1 to rounds; (mode, decode) <- only) {
      val store = Store.open(StoreLocation(args(0)), null, None)
      try {
        store.logEnd
        val started = System.nanoTime()
        val cpuStarted = threads.getCurrentThreadCpuTime
        var sink = 0L
        val stats =
          store.scan(Long.MinValue, Long.MaxValue, verifyCrc = false, permissive = false)(v => sink += decode(v))
        val seconds = (System.nanoTime() - started) / 1e9
        val cpu = (threads.getCurrentThreadCpuTime - cpuStarted) / 1e9
        println(
          f"round $round $mode: ${stats.records} messages, ${store.logEnd / 1048576.0}%.1f MiB in $seconds%.3f s " +
            f"($cpu%.3f s CPU, ${stats.records / cpu}%.0f msg/s of CPU): " +
            f"${stats.records / seconds}%.0f msg/s, ${store.logEnd / 1048576.0 / seconds}%.1f MiB/s (sink $sink)"
        )
      } finally store.close()
    }
  }
}
