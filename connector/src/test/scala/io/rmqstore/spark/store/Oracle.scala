package io.rmqstore.spark.store

import java.net.InetAddress
import java.nio.ByteBuffer
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import io.rmqstore.spark.format.{ByteSource, IndexFile}
import io.rmqstore.spark.format.Encode.IndexBuilder

/** RocketMQ's answers about the conformance fixtures (tests/conformance/fixtures/NAME/oracle.json),
  * the Scala twin of tests/conformance/oracle.py (fields: tests/conformance/README.md).
  */
object Oracle {
  val FixturesDir: Path = Paths.get("tests/conformance/fixtures")
  private val mapper = new ObjectMapper()

  lazy val all: Map[String, JsonNode] =
    Files.list(FixturesDir).iterator.asScala.toSeq.filter(p => Files.isRegularFile(p.resolve("oracle.json"))).map { p =>
      p.getFileName.toString -> mapper.readTree(p.resolve("oracle.json").toFile)
    }.toMap

  /** Fixtures with their own records and queries. */
  lazy val main: Seq[String] = all.keys.filter(n => !all(n).has("recordsFrom")).toSeq.sorted

  /** Copies of a running store with a torn last record. */
  lazy val crash: Seq[String] = all.keys.filter(n => all(n).has("recordsFrom")).toSeq.sorted

  def storeDir(name: String): String = FixturesDir.resolve(name).resolve("store").toAbsolutePath.toString

  /** Relative path -> SHA-256 of every file of a fixture's store (a read must leave them all unchanged). */
  def fileHashes(name: String): Map[String, Seq[Byte]] = {
    val root = Paths.get(storeDir(name))
    Files.walk(root).iterator.asScala.filter(Files.isRegularFile(_)).map { p =>
      root.relativize(p).toString ->
        java.security.MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)).toSeq
    }.toMap
  }

  def geometry(name: String): (Int, Int) = {
    val config = all(name).get("config")
    (config.get("maxHashSlotNum").asInt, config.get("maxIndexNum").asInt)
  }

  private val copies = new java.util.concurrent.ConcurrentLinkedQueue[Path]()
  sys.addShutdownHook(copies.forEach { dir =>
    Files.walk(dir).sorted(java.util.Comparator.reverseOrder[Path]()).forEach(p => Files.deleteIfExists(p))
  })

  /** A copy of fixture `name`'s store as `dir`/store (`skip`: files left out); `dir` is deleted when the JVM
    * exits.
    */
  def copy(name: String, dir: Path, skip: Path => Boolean = _ => false): Path = {
    copies.add(dir)
    val from = Paths.get(storeDir(name))
    val to = dir.resolve("store")
    Files.walk(from).iterator.asScala.foreach { p =>
      val target = to.resolve(from.relativize(p).toString)
      if (Files.isDirectory(p)) Files.createDirectories(target) else if (!skip(p)) Files.copy(p, target)
    }
    to
  }

  /** `copy` whose index files hold RocketMQ's entries (hash, offset, time) re-laid at another geometry, written
    * as sparse files (the broker's default one is 420 MB per file).
    */
  def copyRelayingIndex(name: String, dir: Path, slots: Int, entries: Int): Path = {
    val to = copy(name, dir, _.getParent.endsWith("index"))
    val (fixtureSlots, fixtureEntries) = geometry(name)
    var (prevPhy, prevTs) = (0L, 0L)
    for (file <- Files.list(Paths.get(storeDir(name), "index")).iterator.asScala.toSeq.sortBy(_.getFileName.toString)) {
      val data = ByteSource(ByteBuffer.wrap(Files.readAllBytes(file)))
      val view = new IndexFile.View(data, fixtureSlots, fixtureEntries)
      val h = view.header
      val b = new IndexBuilder(slots, entries, prevPhy, prevTs)
      for (e <- 1 to h.entryCount)
        b.putHash(view.entryHash(e), view.entryPhy(e), h.beginTimestamp + view.entryTimeDiff(e) * 1000L)
      b.writeSparse(to.resolve("index").resolve(file.getFileName))
      prevPhy = h.endPhyOffset
      prevTs = h.endTimestamp
    }
    to
  }

  def open(name: String, detect: Boolean = false): Store =
    Store.open(StoreLocation(storeDir(name)), null, if (detect) None else Some(geometry(name)))

  /** Every record a reader must return in log order; a crash copy's stop at RocketMQ's recovered end. */
  def records(name: String): Seq[JsonNode] = {
    val oracle = all(name)
    if (!oracle.has("recordsFrom")) oracle.get("records").asScala.toSeq
    else {
      val end = oracle.get("recoveredMaxPhyOffset").asLong
      all(oracle.get("recordsFrom").asText).get("records").asScala.toSeq.filter(_.get("commitLogOffset").asLong < end)
    }
  }

  /** 'ip:port' or '[v6]:port' as a comparable (address, port); Java prints IPv6 uncompressed. */
  def host(text: String): (InetAddress, Int) = {
    val at = text.lastIndexOf(':')
    (InetAddress.getByName(text.substring(0, at).stripPrefix("[").stripSuffix("]")), text.substring(at + 1).toInt)
  }

  def text(node: JsonNode, field: String): String = if (node.get(field).isNull) null else node.get(field).asText

  /** An oracle offset table (`topic@group` -> {queueId: offset}) as `Store.consumerOffsets` answers it. */
  def offsetTable(node: JsonNode): Map[(String, String), Map[Int, Long]] =
    node.fields.asScala.map { e =>
      val at = e.getKey.indexOf('@')
      (e.getKey.substring(0, at), e.getKey.substring(at + 1)) ->
        e.getValue.fields.asScala.map(q => q.getKey.toInt -> q.getValue.asLong).toMap
    }.toMap

  def longs(node: JsonNode): Seq[Long] = node.asScala.map(_.asLong).toSeq

  def stringMap(node: JsonNode): Map[String, String] = node.fields.asScala.map(e => e.getKey -> e.getValue.asText).toMap
}
