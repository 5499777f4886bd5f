package io.rmqstore.spark.store

import java.nio.file.{Files, Path}
import java.util.Comparator

import scala.jdk.CollectionConverters._

import org.rocksdb.{ColumnFamilyDescriptor, ColumnFamilyHandle, DBOptions, Options, RocksDB, RocksDBException}

import io.rmqstore.spark.io.{LocalFileSystem, StoreFileSystem}

/** A RocksDB directory of the store opened with `RocksDB.openReadOnly` (§4.7), like
  * python/rmqstore/store/rocksdb.py: nothing written, locked, flushed or compacted, the write-ahead log replayed
  * in memory only. RocksDB's info LOG goes to a temporary directory, so the store's bytes stay the same. Uses
  * the rocksdbjni that Spark itself ships (spark-kvstore's dependency), so the connector jar adds none.
  */
private[store] final class RocksDb private (val path: String, logDir: Path) extends AutoCloseable {
  private val dbOptions = new DBOptions().setDbLogDir(logDir.toString)
  private val (db, handles) = {
    val names =
      try RocksDB.listColumnFamilies(new Options(), path).asScala.toSeq
      catch { case e: RocksDBException => throw corrupt(e) }
    val descriptors = names.map(n => new ColumnFamilyDescriptor(n))
    val out = new java.util.ArrayList[ColumnFamilyHandle]()
    try {
      val opened = RocksDB.openReadOnly(dbOptions, path, descriptors.asJava, out)
      (opened, names.map(n => new String(n, "UTF-8")).zip(out.asScala).toMap)
    } catch { case e: RocksDBException => throw corrupt(e) }
  }

  private def corrupt(e: RocksDBException) =
    new StoreCorruptionException(path, 0, s"cannot open the RocksDB read-only: ${e.getMessage}")

  def families: Set[String] = handles.keySet

  private def family(name: String): ColumnFamilyHandle =
    handles.getOrElse(
      name,
      throw new StoreLayoutException(s"$path: RocksDB has no column family '$name' (has ${families.toSeq.sorted})")
    )

  def get(familyName: String, key: Array[Byte]): Option[Array[Byte]] = Option(db.get(family(familyName), key))

  /** (key, value) with lower <= key < upper (no upper: to the end), in key order, read eagerly. */
  def items(
      familyName: String,
      lower: Array[Byte],
      upper: Option[Array[Byte]]
  ): IndexedSeq[(Array[Byte], Array[Byte])] = {
    val it = db.newIterator(family(familyName))
    try {
      val out = IndexedSeq.newBuilder[(Array[Byte], Array[Byte])]
      it.seek(lower)
      while (it.isValid && upper.forall(u => java.util.Arrays.compareUnsigned(it.key(), u) < 0)) {
        out += ((it.key(), it.value()))
        it.next()
      }
      out.result()
    } finally it.close()
  }

  def close(): Unit = {
    handles.values.foreach(_.close())
    db.close()
    dbOptions.close()
    Files.walk(logDir).sorted(Comparator.reverseOrder[Path]()).forEach(p => Files.deleteIfExists(p))
  }
}

private[store] object RocksDb {

  /** Every RocksDB database directory has it (the name of the live MANIFEST). */
  final val CurrentFile = "CURRENT"

  def isRocksDb(fs: StoreFileSystem, path: String): Boolean = fs.info(fs.join(path, CurrentFile)).exists(!_.isDir)

  /** The RocksDB at `path` of a local store; StoreLayoutException naming `feature` for a remote one. */
  def openLocal(fs: StoreFileSystem, path: String, feature: String): RocksDb = fs match {
    case _: LocalFileSystem =>
      RocksDB.loadLibrary()
      new RocksDb(path, Files.createTempDirectory("rmqstore-rocksdb-log-"))
    case _ =>
      throw new StoreLayoutException(
        s"$path: $feature is a RocksDB database, which rmqstore reads from a local directory only; " +
          "copy the store (or that directory) to a local disk and open it there"
      )
  }
}
