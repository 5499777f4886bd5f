package io.rmqstore.spark.store

import java.nio.file.{AtomicMoveNotSupportedException, Files, Path, Paths, StandardCopyOption}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/** Facts about the commit-log segments of a store cached on disk outside the store, in the files of
  * python/rmqstore/store/segment_cache.py, so that what one engine built serves the other (docs/design.md §8).
  *
  * The entries of one store live in one JSON file, `<kind>/<sha256 of the store's identity>.json` under
  * `SegmentCache.root` (never inside the store; the identity: `CacheIdentity`), keyed by segment file name:
  * `{"version", "salt", "segments": {name: [size, mtime in ns, records' end or null, *entry]}}`. An entry is
  * reused while its segment has the same size and mtime and, for the segment holding the valid end, the same
  * records' end, and while the salt and the version are the same.
  */
private[spark] final class SegmentCache(identity: CacheIdentity, kind: String, version: Int, salt: String) {
  import SegmentCache._

  /** `<kind>/<identity's digest>.json` under `root`. */
  val path: Path = root.resolve(kind).resolve(identity.digest + ".json")

  /** Base offset -> cached entry (the JSON values after the key), for the segments of `live` whose entry
    * is still valid; `logEnd`: the store's valid end.
    */
  def load(live: Seq[Segment], logEnd: Long): Map[Long, IndexedSeq[JsonNode]] = {
    val entries = read()
    live.flatMap { seg =>
      entries.get(seg.name).collect {
        case entry if entry.size >= 3 && keyMatches(entry, key(seg, logEnd)) => seg.baseOffset -> entry.drop(3)
      }
    }.toMap
  }

  /** Whatever is cached for the segment's name, valid or not: (its key then, its entry)
    * (python/rmqstore/store/segment_cache.py `stale`).
    */
  def stale(seg: Segment): Option[(IndexedSeq[JsonNode], IndexedSeq[JsonNode])] =
    read().get(seg.name).filter(_.size >= 3).map(entry => (entry.take(3), entry.drop(3)))

  /** Write these entries (JSON values) as the whole cache, by atomic rename; failures are only ignored
    * (a cache that cannot be written is built again next time).
    */
  def save(entries: Seq[(Segment, Seq[Any])], logEnd: Long): Unit = {
    val segments = new java.util.LinkedHashMap[String, Any]()
    entries.foreach { case (seg, entry) => segments.put(seg.name, toJava(key(seg, logEnd) ++ entry)) }
    val doc = new java.util.LinkedHashMap[String, Any]()
    doc.put("version", version)
    doc.put("salt", salt)
    doc.put("segments", segments)
    try {
      Files.createDirectories(path.getParent)
      val tmp = Files.createTempFile(path.getParent, "", ".tmp")
      try {
        Files.write(tmp, Mapper.writeValueAsBytes(doc))
        moveAtomically(tmp, path)
      } finally Files.deleteIfExists(tmp)
    } catch { case NonFatal(_) => () }
  }

  private def read(): Map[String, IndexedSeq[JsonNode]] =
    try {
      val doc = Mapper.readTree(Files.readAllBytes(path))
      val fits = doc != null && doc.isObject && doc.path("version").isInt && doc.path("version").asInt == version &&
        doc.path("salt").isTextual && doc.path("salt").asText == salt && doc.path("segments").isObject
      if (!fits) Map.empty
      else
        doc.get("segments").properties().asScala.collect {
          case e if e.getValue.isArray => e.getKey -> e.getValue.elements.asScala.toIndexedSeq
        }.toMap
    } catch { case NonFatal(_) => Map.empty }

  /** Size, mtime (ns) and, for the segment holding the valid end, where its records end. */
  private def key(seg: Segment, logEnd: Long): Seq[Any] =
    Seq(seg.size, identity.mtimeNs(seg), if (seg.contains(logEnd)) logEnd - seg.baseOffset else null)

  private def keyMatches(entry: IndexedSeq[JsonNode], wanted: Seq[Any]): Boolean =
    entry.take(3).zip(wanted).forall {
      case (node, null) => node.isNull
      case (node, value: Long) => node.canConvertToLong && node.isIntegralNumber && node.asLong == value
      case _ => false
    }
}

private[spark] object SegmentCache {

  /** python/rmqstore/cachedir.py: where rmqstore keeps caches of its own. */
  final val CacheDirEnv = "RMQSTORE_CACHE_DIR"

  private val Mapper = new ObjectMapper()

  /** This process's cache directory: `rootFor` its environment and `user.home`. */
  def root: Path = rootFor(name => Option(System.getenv(name)), System.getProperty("user.home"))

  /** The rule both engines follow (python/rmqstore/cachedir.py `cache_root`): `$RMQSTORE_CACHE_DIR`, else
    * `$XDG_CACHE_HOME/rmqstore`, else `$HOME/.cache/rmqstore`, else `<userHome>/.cache/rmqstore` (unset or
    * empty variables do not count).
    */
  def rootFor(env: String => Option[String], userHome: String): Path = {
    def set(name: String) = env(name).filter(_.nonEmpty)
    set(CacheDirEnv).map(Paths.get(_))
      .orElse(set("XDG_CACHE_HOME").map(Paths.get(_, "rmqstore")))
      .getOrElse(Paths.get(set("HOME").getOrElse(userHome), ".cache", "rmqstore"))
  }

  /** Byte ranges cached as `[[start, end], ...]`, None when `node` is not that shape. */
  def ranges(node: JsonNode): Option[IndexedSeq[(Long, Long)]] = {
    val pairs = node.elements.asScala.toIndexedSeq
    val ok = node.isArray &&
      pairs.forall(p => p.isArray && p.size == 2 && p.get(0).isIntegralNumber && p.get(1).isIntegralNumber)
    if (ok) Some(pairs.map(p => (p.get(0).asLong, p.get(1).asLong))) else None
  }

  /** Replace `target` by `source`, atomically where the file system can. */
  def moveAtomically(source: Path, target: Path): Unit =
    try Files.move(source, target, StandardCopyOption.ATOMIC_MOVE)
    catch {
      case _: AtomicMoveNotSupportedException => Files.move(source, target, StandardCopyOption.REPLACE_EXISTING)
    }

  private def toJava(value: Any): Any = value match {
    case items: Seq[_] => items.map(toJava).asJava
    case (a, b) => java.util.List.of(toJava(a).asInstanceOf[AnyRef], toJava(b).asInstanceOf[AnyRef])
    case other => other
  }
}
