package io.rmqstore.spark.store

import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets.{US_ASCII, UTF_8}
import java.nio.file.Paths
import java.security.MessageDigest

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.format.{IndexFile, JavaHash}

/** The side index's files are the Python engine's (python/rmqstore/store/side_index.py): NumPy `.npy`
  * arrays and a cache named by Python's `json.dumps` of the store's identity. Expected values are what
  * NumPy and Python wrote; the cross-engine use is proven in tests/spark/test_side_index_engines.py.
  */
class SideIndexSuite extends AnyFunSuite {
  private def npy(header: String, longs: Long*): Array[Byte] = {
    val out = ByteBuffer.allocate(10 + header.length + 8 * longs.size).order(ByteOrder.LITTLE_ENDIAN)
    out.put(Array[Byte](0x93.toByte, 'N', 'U', 'M', 'P', 'Y', 1, 0)).putShort(header.length.toShort)
    out.put(header.getBytes(US_ASCII))
    longs.foreach(out.putLong)
    out.array()
  }

  test("arrays are written as numpy.save writes them and read back") {
    // np.save(fh, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)): a 118-byte header
    val saved = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }" + " " * 58 + "\n", 1, 2, 3, 4, 5, 6)
    assert(SideIndex.Npy.encode(Array(1L, 2L, 3L), Array(4L, 5L, 6L)).toSeq == saved.toSeq)
    val Some((hashes, offsets)) = SideIndex.Npy.decode(saved)
    assert(hashes.toSeq == Seq(1L, 2L, 3L) && offsets.toSeq == Seq(4L, 5L, 6L))
    val Some((none, _)) = SideIndex.Npy.decode(SideIndex.Npy.encode(Array.empty, Array.empty))
    assert(none.isEmpty)
  }

  test("Fortran-ordered arrays are read; other shapes, types and truncated files are not") {
    // np.save(fh, np.asfortranarray([[5, -6], [7, 8]])): the data column by column
    val header = "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 2), }" + " " * 59 + "\n"
    val Some((first, second)) = SideIndex.Npy.decode(npy(header, 5, 7, -6, 8))
    assert(first.toSeq == Seq(5L, -6L) && second.toSeq == Seq(7L, 8L))
    assert(SideIndex.Npy.decode(npy(header.replace("<i8", "<i4"), 5, 7, -6, 8)).isEmpty)
    assert(SideIndex.Npy.decode(npy(header.replace("(2, 2)", "(3, 2)"), 5, 7, -6, 8)).isEmpty)
    assert(SideIndex.Npy.decode(npy(header, 5, 7, -6)).isEmpty)
    assert(SideIndex.Npy.decode("not an array".getBytes(US_ASCII)).isEmpty)
  }

  test("a store's cache file is named by Python's json.dumps of its identity") {
    // json.dumps(['/tmp/ключ "x"\\', ['/a\x7f\t鍵🔑']])
    val python = "[\"/tmp/\\u043a\\u043b\\u044e\\u0447 \\\"x\\\"\\\\\", [\"/a\\u007f\\t\\u9375\\ud83d\\udd11\"]]"
    assert(CacheIdentity.pythonJson(Seq[Any]("/tmp/ключ \"x\"\\", Seq("/a\u007f\t鍵🔑"))) == python)
    // the identity vectors both engines' tests read (docs/design.md §8.2)
    val vectors =
      new ObjectMapper().readTree(Paths.get("tests/vectors/format_vectors.json").toFile).get("cache_identity")
    assert(vectors.size == 3)
    for (v <- vectors.elements().asScala) {
      def strings(node: JsonNode): Any = if (node.isArray) node.elements().asScala.map(strings).toSeq else node.asText
      val json = CacheIdentity.pythonJson(strings(v.get("identity")))
      assert(json == v.get("json").asText)
      val digest = MessageDigest.getInstance("SHA-256").digest(json.getBytes(UTF_8)).map(b => f"$b%02x").mkString
      assert(digest + ".json" == v.get("file").asText)
    }
  }

  test("a remote store's cache file is named by its location and the commit-log directory as pyarrow names it") {
    // hashlib.sha256(json.dumps([location, [store.commitlog_dirs[0]]]).encode()).hexdigest()
    for (
      (location, digest) <- Seq(
        "s3://b/my store" -> "c20b5db137aea1a407283b32ffe18b421bb5640626543ebe265f15172cd342ef", // b/my store/commitlog
        "hdfs://nn:8020/rmq" -> "7c3b0b9d295a461a1726a911896506e1d744596452d2e9ddf5f09bd44ad4c7a8" // /rmq/commitlog
      )
    ) {
      val cache = CacheIdentity.remote(location, location + "/commitlog").cache(SideIndex.CacheKind, 1, "")
      assert(cache.path == SegmentCache.root.resolve(SideIndex.CacheKind).resolve(digest + ".json"), location)
    }
  }

  test("candidates are the offsets of the entries with the hash of topic#key, in every segment's part") {
    def hash(topic: String, key: String) = JavaHash.indexKeyHash(IndexFile.indexKey(topic, key)).toLong
    val (a, b) = (hash("T", "a"), hash("T", "b"))
    val parts = IndexedSeq(
      (Array(a, a, b).sorted, if (a < b) Array(10L, 30L, 20L) else Array(20L, 10L, 30L)),
      (Array(a), Array(99L))
    )
    val side = SideIndexParts(parts, IndexedSeq("T"), None)
    assert(side.candidates("T", "a").toSeq == Seq(10L, 30L, 99L))
    assert(side.candidates("T", "b").toSeq == Seq(20L))
    assert(side.candidates("U", "a").isEmpty)
  }
}
