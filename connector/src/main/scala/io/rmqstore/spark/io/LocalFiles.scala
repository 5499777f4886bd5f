package io.rmqstore.spark.io

import java.io.{FileNotFoundException, IOException}
import java.nio.{ByteBuffer, MappedByteBuffer}
import java.nio.channels.FileChannel
import java.nio.file.{Files, LinkOption, NoSuchFileException, NotDirectoryException, Path, Paths, StandardOpenOption}
import java.nio.file.attribute.BasicFileAttributes

import scala.jdk.CollectionConverters._
import scala.util.Using

/** Local files, read-only. Sealed files are memory-mapped once for scans (a mapped file deleted by retention
  * stays readable; one truncated would raise a fatal InternalError, so only files the broker no longer writes
  * are mapped, and the kernel reads ahead of the pages a scan touches); other files, and files opened
  * `random` for point reads, are read with positioned reads (`FileChannel.read(buf, pos)`) that fetch just
  * the pages asked for (design §4.5). Special files (FIFOs, devices, sockets) are never opened (design §4.1).
  */
final class LocalFileSystem extends StoreFileSystem {
  def join(base: String, names: String*): String = names.foldLeft(Paths.get(base))(_.resolve(_)).toString

  def list(path: String): IndexedSeq[FileEntry] =
    try Using.resource(Files.list(Paths.get(path)))(_.iterator.asScala.flatMap(entry).toIndexedSeq.sortBy(_.name))
    catch { case _: NoSuchFileException | _: NotDirectoryException => IndexedSeq.empty }

  def info(path: String): Option[FileEntry] = entry(Paths.get(path))

  def open(path: String, finished: Boolean, random: Boolean): RandomAccess = {
    val p = Paths.get(path)
    if (!info(path).exists(!_.isDir)) throw new FileNotFoundException(s"$path: no such regular file")
    val channel = FileChannel.open(p, StandardOpenOption.READ)
    try {
      val size = channel.size
      if (finished && !random && size <= Int.MaxValue) {
        val map = channel.map(FileChannel.MapMode.READ_ONLY, 0, size)
        channel.close()
        new MappedFile(path, map)
      } else new PositionalFile(path, channel, size)
    } catch {
      case e: Throwable =>
        channel.close()
        throw e
    }
  }

  def close(): Unit = ()

  private def entry(p: Path): Option[FileEntry] =
    try {
      val attrs = Files.readAttributes(p, classOf[BasicFileAttributes]) // follows symlinks
      val name = Option(p.getFileName).map(_.toString).getOrElse(p.toString)
      if (attrs.isDirectory) Some(FileEntry(name, p.toString, 0, isDir = true, 0))
      else if (attrs.isRegularFile)
        Some(FileEntry(name, p.toString, attrs.size, isDir = false, attrs.lastModifiedTime.toMillis))
      else None
    } catch { case _: IOException => None }
}

/** A finished local file mapped once; `read` returns zero-copy slices of the map. */
final class MappedFile(val path: String, map: MappedByteBuffer) extends RandomAccess {
  val length: Long = map.capacity.toLong
  def zeroCopy: Boolean = true

  def read(pos: Long, len: Int): ByteBuffer = {
    val n = clip(pos, len)
    if (n == 0) ByteBuffer.allocate(0) else map.slice(pos.toInt, n)
  }

  def close(): Unit = () // Java 17 has no supported unmap; the map goes with its last reference.
}

/** A local file the broker may still write, or one read by point reads: positioned reads into fresh buffers. */
final class PositionalFile(val path: String, channel: FileChannel, val length: Long) extends RandomAccess {
  def zeroCopy: Boolean = false

  def read(pos: Long, len: Int): ByteBuffer = {
    val n = clip(pos, len)
    val buf = ByteBuffer.allocate(n)
    while (buf.hasRemaining) {
      val got = channel.read(buf, pos + buf.position())
      if (got < 0) throw new IOException(s"$path: short read at offset $pos: file shrank below $length bytes")
    }
    buf.flip()
    buf
  }

  def close(): Unit = channel.close()
}
