package io.rmqstore.spark.io

import java.net.URI

import org.apache.hadoop.conf.Configuration

/** One directory entry; `modifiedMs`: last-modified time in epoch milliseconds (0 for directories). */
final case class FileEntry(name: String, path: String, size: Long, isDir: Boolean, modifiedMs: Long)

/** Directory listing and read-only file access, local or remote. */
trait StoreFileSystem extends AutoCloseable {

  /** `base/name/...` in this file system's path syntax. */
  def join(base: String, names: String*): String

  /** Entries of a directory sorted by name (regular files and directories only); empty when missing. */
  def list(path: String): IndexedSeq[FileEntry]

  /** The entry for `path` (a regular file or a directory), None otherwise. */
  def info(path: String): Option[FileEntry]

  /** Open a regular file for positioned reads. `finished` files (no longer written) may be memory-mapped for
    * scans; others are read by positioned reads so a file truncated under us cannot crash the JVM. `random`:
    * the file is only probed (point and planning reads, never scanned), so it is read by positioned reads of
    * just the bytes asked for (a page fault in a map reads the whole read-ahead window around the page).
    * FileNotFoundException naming the path when it is missing or not a regular file.
    */
  def open(path: String, finished: Boolean, random: Boolean = false): RandomAccess

  final def isDir(path: String): Boolean = info(path).exists(_.isDir)

  /** The whole (small) file: checkpoint, JSON config. */
  final def readAll(path: String): Array[Byte] = {
    val file = open(path, finished = false)
    try {
      val buf = file.read(0, math.min(file.length, Int.MaxValue.toLong).toInt)
      val out = new Array[Byte](buf.remaining)
      buf.get(out)
      out
    } finally file.close()
  }
}

object StoreFileSystem {

  /** True for `scheme://...` (s3a://, hdfs://, file://); Windows drive letters are not URIs. */
  def isUri(location: String): Boolean = {
    val at = location.indexOf("://")
    at > 1 && location.substring(0, at).forall(c => c.isLetterOrDigit || c == '+' || c == '-' || c == '.')
  }

  /** The local path a `file:/abs/path` URI names (Hadoop's form without `//`, in which Spark's catalog
    * passes a table's path to its source, percent-encoded); anything else as given
    * (python/rmqstore/io/location.py `hadoop_file_path`).
    */
  def hadoopFilePath(location: String): String =
    if (location.regionMatches(true, 0, "file:/", 0, 6) && !location.startsWith("/", 6))
      java.net.URLDecoder.decode(location.substring(5).replace("+", "%2B"), "UTF-8")
    else location

  def isS3Uri(location: String): Boolean = location.regionMatches(true, 0, "s3://", 0, 5)

  /** A local path made absolute (`~` expanded) against this process's working directory; URIs as given
    * (python/rmqstore/io/location.py `absolute_location`). Done where a path is typed (the Spark
    * driver), so that processes with another working directory (executors) read the same store.
    */
  def absoluteLocation(location: String): String =
    if (isUri(location)) location
    else {
      val home = System.getProperty("user.home")
      val expanded = if (location == "~" || location.startsWith("~/")) home + location.drop(1) else location
      java.nio.file.Paths.get(expanded).toAbsolutePath.normalize.toString
    }

  /** (file system, path) for a local path, a `file://` URI or a remote URI read through Hadoop. */
  def resolve(location: String, conf: Configuration): (StoreFileSystem, String) =
    if (!isUri(location)) (new LocalFileSystem, absoluteLocation(location))
    else {
      val uri = URI.create(location)
      if (uri.getScheme == "file") (new LocalFileSystem, java.nio.file.Paths.get(uri).toString)
      else (new HadoopFileSystem(uri, if (conf == null) new Configuration() else conf), location.stripSuffix("/"))
    }
}
