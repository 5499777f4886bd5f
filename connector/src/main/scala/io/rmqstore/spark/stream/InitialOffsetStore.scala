package io.rmqstore.spark.stream

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}

/** The stream's first offsets, fixed at the first run: kept in `<checkpoint>/sources/<n>/0` (`v1` and the
  * offset JSON, like Spark's `KafkaSourceInitialOffsetWriter`), so a query restarted before its first
  * batch was planned does not move a `latest` or `group:` start.
  */
object InitialOffsetStore {
  val Version = "v1"

  def getOrCreate(metadataPath: String, conf: Configuration, brokers: Seq[String])(
      compute: => RmqSourceOffset
  ): RmqSourceOffset = {
    val file = new Path(metadataPath, "0")
    val fs = file.getFileSystem(conf)
    def read(): RmqSourceOffset = {
      val in = fs.open(file)
      val text =
        try new String(in.readAllBytes(), UTF_8)
        finally in.close()
      val lines = text.linesIterator.toSeq
      if (lines.headOption.contains(Version) && lines.size >= 2) RmqSourceOffset.parse(lines(1), brokers)
      else throw new IllegalStateException(s"rmqstore: $file is not an initial-offset file ($Version and a JSON line)")
    }
    if (fs.exists(file)) return read()
    val offset = compute
    fs.mkdirs(file.getParent)
    val temp = new Path(file.getParent, s".0.${java.util.UUID.randomUUID()}.tmp")
    val out = fs.create(temp, false)
    try out.write(s"$Version\n${offset.json}".getBytes(UTF_8))
    finally out.close()
    val renamed =
      try fs.rename(temp, file)
      catch { case _: FileAlreadyExistsException => false }
    if (!renamed) { // another run of the query got there first: its start wins
      fs.delete(temp, false)
      read()
    } else offset
  }
}
