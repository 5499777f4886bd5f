package io.rmqstore.spark.io

import java.io.{FileNotFoundException, IOException}
import java.net.URI
import java.nio.ByteBuffer

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, FileStatus, FileSystem, Path}

/** Stores behind a Hadoop `FileSystem` (hdfs://, s3a://, ...): listings and ranged reads
  * (`readFully(pos, ...)`), so a lookup reads a few kilobytes of a segment, not the segment.
  */
final class HadoopFileSystem(root: URI, conf: Configuration) extends StoreFileSystem {
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

  def open(path: String, finished: Boolean): RandomAccess = {
    val entry = info(path).filter(!_.isDir).getOrElse(throw new FileNotFoundException(s"$path: no such file"))
    new HadoopFile(path, fs.open(new Path(path)), entry.size)
  }

  private def entry(s: FileStatus, path: String): FileEntry =
    if (s.isFile) FileEntry(s.getPath.getName, path, s.getLen, isDir = false, s.getModificationTime)
    else FileEntry(s.getPath.getName, path, 0, isDir = true, 0)

  def close(): Unit = () // FileSystem instances are cached and shared by Hadoop.
}

/** A remote file read with positioned ranged reads; every `read` is one request. */
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

  def close(): Unit = in.close()
}
