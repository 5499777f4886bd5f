package io.rmqstore.spark.io

import java.net.URI
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, Path, RawLocalFileSystem}

/** Local files as a remote Hadoop file system `countfs:///abs/path` that records every read it serves, so
  * tests prove ranged reads by the bytes read. Registered by `CountingFileSystem.conf`.
  */
class CountingFileSystem extends RawLocalFileSystem {
  override def getUri: URI = CountingFileSystem.Root
  override def getScheme: String = CountingFileSystem.Scheme

  override def open(f: Path, bufferSize: Int): FSDataInputStream =
    new FSDataInputStream(new CountingFileSystem.Counted(f.toUri.getPath, super.open(f, bufferSize)))
}

object CountingFileSystem {
  final val Scheme = "countfs"
  final val Root: URI = URI.create(s"$Scheme:///")

  /** One read: file (local path), offset, bytes returned. */
  final case class Read(path: String, offset: Long, bytes: Int)

  private val log = new ConcurrentLinkedQueue[Read]()
  private val vectored = new ConcurrentLinkedQueue[(String, Int)]()

  /** A configuration that serves `countfs://` with this class. */
  def conf: Configuration = {
    val c = new Configuration()
    c.set(s"fs.$Scheme.impl", classOf[CountingFileSystem].getName)
    c.setBoolean(s"fs.$Scheme.impl.disable.cache", true)
    c
  }

  /** `countfs://` URI of a local absolute path. */
  def uri(localPath: String): String = s"$Scheme://$localPath"

  /** Reads of files under `dir` (a local path) so far. */
  def reads(dir: String): Seq[Read] = log.asScala.filter(_.path.startsWith(dir)).toSeq

  /** Vectored reads (one batch each, `VectoredCounting`) of files under `dir` so far: the number of ranges of each. */
  def batches(dir: String): Seq[Int] = vectored.asScala.filter(_._1.startsWith(dir)).map(_._2).toSeq

  private final class Counted(path: String, in: FSDataInputStream) extends VectoredCounting {
    protected def batch(ranges: Int): Unit = vectored.add((path, ranges))

    private def record(offset: Long, n: Int): Int = {
      if (n > 0) log.add(Read(path, offset, n))
      n
    }
    override def read(): Int = {
      val at = in.getPos
      val b = in.read()
      if (b >= 0) record(at, 1)
      b
    }
    override def read(b: Array[Byte], off: Int, len: Int): Int = {
      val at = in.getPos
      record(at, in.read(b, off, len))
    }
    override def read(position: Long, b: Array[Byte], off: Int, len: Int): Int =
      record(position, in.read(position, b, off, len))
    override def seek(pos: Long): Unit = in.seek(pos)
    override def getPos: Long = in.getPos
    override def seekToNewSource(targetPos: Long): Boolean = false
    override def close(): Unit = in.close()
  }
}
