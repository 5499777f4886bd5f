package io.rmqstore.spark.format

import java.io.ByteArrayOutputStream
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.util.zip.CRC32

/** Test-side writers: the bytes a broker writes for records, BLANKs and index files (§2.2, §2.6, §5.5). */
object Encode {
  def hex(s: String): Array[Byte] = s.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
  def toHex(b: Array[Byte]): String = b.map(x => f"${x & 0xff}%02X").mkString

  def crc(bytes: Array[Byte], len: Int): Int = {
    val c = new CRC32
    c.update(bytes, 0, len)
    (c.getValue & 0x7fffffff).toInt
  }

  /** `name 0x01 value 0x02` per pair, in order (§2.8). */
  def properties(pairs: (String, String)*): Array[Byte] =
    pairs.map { case (n, v) => s"${n}\u0001${v}\u0002" }.mkString.getBytes(UTF_8)

  /** A 4-byte IPv4 or 16-byte IPv6 address plus port (§2.4). */
  def host(address: Array[Byte], port: Int): Array[Byte] =
    ByteBuffer.allocate(address.length + 4).put(address).putInt(port).array

  val Localhost: Array[Byte] = host(Array[Byte](127, 0, 0, 1), 10911)

  /** One record as `MessageExtEncoder.encode` writes it; `props` are the raw PROPERTIES bytes. */
  def record(
      topic: String = "TopicTest",
      body: Array[Byte] = "hello".getBytes(UTF_8),
      props: Array[Byte] = properties("KEYS" -> "k1 k2", "TAGS" -> "TagA"),
      queueId: Int = 0,
      flag: Int = 0,
      queueOffset: Long = 0,
      phy: Long = 0,
      sysFlag: Int = 0,
      bornTs: Long = 1700000000000L,
      storeTs: Long = 1700000000123L,
      bornHost: Array[Byte] = host(Array[Byte](127, 0, 0, 1), 53010),
      storeHost: Array[Byte] = Localhost,
      magic: Int = Layout.MagicV1,
      appendCrc: Boolean = false,
      bodyCrc: Option[Int] = None
  ): Array[Byte] = {
    val flags = (sysFlag & ~0x30) | (if (bornHost.length == 20) 0x10 else 0) | (if (storeHost.length == 20) 0x20 else 0)
    val topicBytes = topic.getBytes(UTF_8)
    val propsLen = props.length + (if (appendCrc) Layout.Crc32ReservedLen else 0)
    val total = Layout.recordLength(flags, magic, body.length, topicBytes.length, propsLen)
    val out = ByteBuffer.allocate(total)
    out.putInt(total).putInt(magic).putInt(bodyCrc.getOrElse(crc(body, body.length))).putInt(queueId).putInt(flag)
    out.putLong(queueOffset).putLong(phy).putInt(flags).putLong(bornTs).put(bornHost).putLong(storeTs).put(storeHost)
    out.putInt(0).putLong(0).putInt(body.length).put(body)
    if (magic == Layout.MagicV2) out.putShort(topicBytes.length.toShort) else out.put(topicBytes.length.toByte)
    out.put(topicBytes).putShort(propsLen.toShort).put(props)
    if (appendCrc) {
      val digits = f"${crc(out.array, out.position())}%010d".reverse
      out.put(s"${Layout.Crc32PropertyName}\u0001${digits}\u0002".getBytes(UTF_8))
    }
    out.array
  }

  /** The 8-byte end-of-segment BLANK covering `size` bytes (§2.6). */
  def blank(size: Int): Array[Byte] = ByteBuffer.allocate(8).putInt(size).putInt(Layout.BlankMagic).array

  /** An index file built exactly like `IndexFile.putKey` (§5.5), roll-over quirk included; kept sparse (the
    * slots and entries written), so files of the broker's default geometry (420 MB) can be written as sparse
    * files.
    */
  final class IndexBuilder(slots: Int, entries: Int, prevEndPhy: Long = 0, prevEndTs: Long = 0) {
    private val slotValues = scala.collection.mutable.HashMap.empty[Int, Int]
    private val entryArea = new ByteArrayOutputStream() // entries 1, 2, ...
    private var beginTs, endTs = math.max(prevEndTs, 0L)
    private var beginPhy, endPhy = math.max(prevEndPhy, 0L)
    private var used = 0
    private var count = 1
    private var written = false

    def put(key: String, phy: Long, storeTs: Long): Unit = putHash(JavaHash.indexKeyHash(key), phy, storeTs)

    /** `put` of a key whose `JavaHash.indexKeyHash` is `h`. */
    def putHash(h: Int, phy: Long, storeTs: Long): Unit = {
      require(count < entries)
      var slotValue = slotValues.getOrElse(h % slots, 0)
      if (slotValue <= 0 || slotValue > count) slotValue = 0
      val diff = storeTs - beginTs
      val timeDiff = if (beginTs <= 0 || diff < 0) 0 else math.min(diff / 1000, Int.MaxValue.toLong).toInt
      entryArea.write(ByteBuffer.allocate(20).putInt(h).putLong(phy).putInt(timeDiff).putInt(slotValue).array)
      slotValues(h % slots) = count
      if (count <= 1) { beginPhy = phy; beginTs = storeTs }
      if (slotValue == 0) used += 1
      count += 1
      endPhy = phy
      endTs = storeTs
      written = true
    }

    private def header: ByteBuffer =
      ByteBuffer.allocate(40).putLong(beginTs).putLong(endTs).putLong(beginPhy).putLong(endPhy).putInt(used)
        .putInt(if (written) count else 0).flip()

    /** The whole file. */
    def bytes: Array[Byte] = {
      val buf = ByteBuffer.allocate(IndexFile.fileSize(slots, entries).toInt)
      buf.put(0, header, 0, 40)
      slotValues.foreach { case (slot, value) => buf.putInt(40 + 4 * slot, value) }
      buf.put(40 + 4 * slots + 20, entryArea.toByteArray)
      buf.array
    }

    /** Write the file at `path` as a sparse file: only the header, the used slots and the entries. */
    def writeSparse(path: java.nio.file.Path): Unit = {
      val out = java.nio.channels.FileChannel.open(
        path,
        java.nio.file.StandardOpenOption.CREATE_NEW,
        java.nio.file.StandardOpenOption.WRITE
      )
      try {
        out.write(ByteBuffer.allocate(1), IndexFile.fileSize(slots, entries) - 1)
        out.write(header, 0)
        slotValues.foreach { case (slot, value) =>
          out.write(ByteBuffer.allocate(4).putInt(value).flip(), 40 + 4L * slot)
        }
        out.write(ByteBuffer.wrap(entryArea.toByteArray), 40 + 4L * slots + 20)
      } finally out.close()
    }
  }

  def concat(parts: Array[Byte]*): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    parts.foreach(out.write)
    out.toByteArray
  }
}
