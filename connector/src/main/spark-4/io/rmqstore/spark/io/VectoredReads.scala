package io.rmqstore.spark.io

import java.io.IOException
import java.nio.ByteBuffer
import java.util.concurrent.ExecutionException

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{FSDataInputStream, FileRange}

/** Hadoop's vectored reads (`FSDataInputStream.readVectored`, Hadoop 3.3.5+: the Hadoop of Spark 4), which S3A
  * runs concurrently, merging close ranges.
  */
private[io] object VectoredReads {

  /** The bytes of `ranges` (sorted, disjoint, inside the file) as one vectored read; None where Hadoop has none. */
  def read(path: String, in: FSDataInputStream, ranges: Seq[(Long, Int)]): Option[Seq[ByteBuffer]] = {
    val requests = ranges.map { case (pos, n) => FileRange.createFileRange(pos, n) }
    in.readVectored(requests.asJava, (n: Int) => ByteBuffer.allocate(n))
    Some(requests.map { r =>
      try r.getData.get()
      catch {
        case e: ExecutionException =>
          throw new IOException(s"$path: ranged read at offset ${r.getOffset} failed: ${e.getCause}", e.getCause)
      }
    })
  }
}
