package io.rmqstore.spark.io

import java.io.{FileNotFoundException, IOException}
import java.net.URI
import java.nio.ByteBuffer

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, FileStatus, FileSystem, Path}
import org.apache.hadoop.util.functional.FutureIO

/** Stores behind a Hadoop `FileSystem` (hdfs://, s3a://, ...): listings and ranged reads
  * (`readFully(pos, ...)`), so a lookup reads a few kilobytes of a segment, not the segment.
  */
final class HadoopFileSystem(root: URI, conf: Configuration) extends StoreFileSystem {
  import HadoopFileSystem._

  private val fs: FileSystem = FileSystem.get(root, conf)

  def join(base: String, names: String*): String =
    names.foldLeft(base.stripSuffix("/"))((acc, name) => acc + "/" + name)

  def list(path: String): IndexedSeq[FileEntry] =
    try fs.listStatus(new Path(path)).toIndexedSeq.filter(s => s.isFile || s.isDirectory).map { s =>
        entry(s, join(path, s.getPath.getName))
      }.sortBy(_.name)
    catch { case _: FileNotFoundException => IndexedSeq.empty }

  def info(path: String): Option[FileEntry] =
    try {
      val s = fs.getFileStatus(new Path(path))
      if (s.isFile || s.isDirectory) Some(entry(s, path)) else None
    } catch { case _: FileNotFoundException => None }

  /** Opened for random reads (`fs.option.openfile.read.policy` = random): every read is a ranged request of
    * what was asked (S3A adds its readahead), never a stream to the end of the file; the listed status saves
    * the file system a second lookup.
    */
  def open(path: String, finished: Boolean, random: Boolean): RandomAccess = {
    val status =
      try fs.getFileStatus(new Path(path))
      catch { case _: FileNotFoundException => null }
    if (status == null || !status.isFile) throw new FileNotFoundException(s"$path: no such file")
    val in = FutureIO.awaitFuture(fs.openFile(status.getPath).withFileStatus(status).opt(ReadPolicy, "random").build())
    new HadoopFile(path, in, status.getLen)
  }

  private def entry(s: FileStatus, path: String): FileEntry =
    if (s.isFile) FileEntry(s.getPath.getName, path, s.getLen, isDir = false, s.getModificationTime)
    else FileEntry(s.getPath.getName, path, 0, isDir = true, 0)

  def close(): Unit = () // FileSystem instances are cached and shared by Hadoop.
}

object HadoopFileSystem {

  /** `Options.OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY` (Hadoop 3.3.5+). */
  final val ReadPolicy = "fs.option.openfile.read.policy"
}

/** A remote file read with positioned ranged reads; every `read` is one request, `readRanges` one vectored
  * read where Hadoop has them (`VectoredReads`).
  */
final class HadoopFile(val path: String, in: FSDataInputStream, val length: Long) extends RandomAccess {
  def zeroCopy: Boolean = false

  def read(pos: Long, len: Int): ByteBuffer = {
    val n = clip(pos, len)
    val bytes = new Array[Byte](n)
    try if (n > 0) in.readFully(pos, bytes, 0, n)
    catch {
      case e: java.io.EOFException =>
        throw new IOException(s"$path: short read at offset $pos: file shrank below $length bytes", e)
    }
    ByteBuffer.wrap(bytes)
  }

  override def readRanges(ranges: Seq[(Long, Int)]): Seq[ByteBuffer] = {
    val wanted = ranges.map { case (pos, len) => (pos, clip(pos, len)) }.filter(_._2 > 0).distinct.sorted
    val disjoint = wanted.zip(wanted.drop(1)).forall { case ((a, n), (b, _)) => a + n <= b }
    if (wanted.length <= 1 || !disjoint) return super.readRanges(ranges)
    VectoredReads.read(path, in, wanted) match {
      case None => super.readRanges(ranges)
      case Some(data) =>
        val fetched = wanted.zip(data).map { case (key, bytes) =>
          if (bytes.remaining != key._2)
            throw new IOException(s"$path: short read at offset ${key._1}: file shrank below $length bytes")
          key -> bytes.slice()
        }.toMap
        ranges.map { case (pos, len) => fetched.getOrElse((pos, clip(pos, len)), ByteBuffer.allocate(0)) }
    }
  }

  def close(): Unit = in.close()
}
