package io.rmqstore.spark.store

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.security.MessageDigest
import java.util.concurrent.TimeUnit

import io.rmqstore.spark.io.{LocalFileSystem, StoreFileSystem}

/** The identity of one store for rmqstore's cache files (docs/design.md §8.2), like
  * python/rmqstore/store/segment_cache.py: Python's `json.dumps([realpath of the root, [realpath of the
  * commit-log directory]])` for a local store, `json.dumps([location as given, [commit-log directory as pyarrow
  * names it]])` for a remote one, whose segments are keyed by the modification time the listing gave (an S3
  * object's upload time: a new upload is another file). `digest`: the sha256 naming the cache files;
  * `mtimeNs`: a segment's mtime in ns as the cache keys it.
  */
private[spark] final class CacheIdentity private (text: => String, mtime: Segment => Long) {

  /** The identity's JSON text, computed when a cache is first used (a local store's resolves real paths). */
  lazy val json: String = text

  lazy val digest: String =
    MessageDigest.getInstance("SHA-256").digest(json.getBytes(UTF_8)).map(b => f"$b%02x").mkString

  def mtimeNs(seg: Segment): Long = mtime(seg)

  /** This store's cache of `kind` (`SegmentCache`). */
  def cache(kind: String, version: Int, salt: String): SegmentCache = new SegmentCache(this, kind, version, salt)
}

private[spark] object CacheIdentity {

  /** The identity of the store at `root` of `fs` whose log is in `commitlogDir`: a local store's, or a remote
    * one's whose listing gives every segment a modification time (None otherwise: no cache files).
    */
  def of(
      fs: StoreFileSystem,
      location: String,
      root: String,
      commitlogDir: String,
      segments: Seq[Segment]
  ): Option[CacheIdentity] =
    if (fs.isInstanceOf[LocalFileSystem]) Some(local(root, commitlogDir))
    else if (segments.forall(_.modifiedMs > 0)) Some(remote(location, commitlogDir))
    else None

  /** The local store at `root` whose log is in `commitlogDir`. */
  def local(root: String, commitlogDir: String): CacheIdentity = {
    val real = (p: String) => Paths.get(p).toRealPath().toString
    val mtime = (seg: Segment) => Files.getLastModifiedTime(Paths.get(seg.path)).to(TimeUnit.NANOSECONDS)
    new CacheIdentity(pythonJson(Seq[Any](real(root), Seq(real(commitlogDir)))), mtime)
  }

  /** The remote store at `location` (as the user gave it) whose log is in `commitlogDir` (a URI), where pyarrow
    * names the directory without its scheme (`bucket/key` for s3:// and gs://, the path for others).
    */
  def remote(location: String, commitlogDir: String): CacheIdentity = {
    val at = commitlogDir.indexOf("://")
    val (scheme, rest) = (commitlogDir.take(math.max(at, 0)), commitlogDir.drop(at + 3))
    val dir = if (Seq("s3", "gs").contains(scheme)) rest else rest.drop(math.max(rest.indexOf('/'), 0))
    new CacheIdentity(pythonJson(Seq[Any](location, Seq(dir))), seg => seg.modifiedMs * 1000000L)
  }

  /** Python's `json.dumps` of strings and lists with the identity's separator and `ensure_ascii` (docs/design.md
    * §8.2).
    */
  def pythonJson(value: Any): String = value match {
    case s: String =>
      val out = new StringBuilder("\"")
      s.foreach {
        case '"' => out ++= "\\\""
        case '\\' => out ++= "\\\\"
        case '\n' => out ++= "\\n"
        case '\r' => out ++= "\\r"
        case '\t' => out ++= "\\t"
        case '\b' => out ++= "\\b"
        case '\f' => out ++= "\\f"
        case c if c < 0x20 || c > 0x7e => out ++= f"\\u${c.toInt}%04x"
        case c => out += c
      }
      out.append('"').toString
    case items: Seq[_] => items.map(pythonJson).mkString("[", ContractStore.CacheIdentitySeparator, "]")
    case other => throw new IllegalArgumentException(s"not a string or a list: $other")
  }
}
