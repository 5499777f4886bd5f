package io.rmqstore.spark.format

/** IndexFile: 40-byte header, S hash slots, N 20-byte entries numbered from 1 (docs/format.md §5), read-only.
  * Mirrors python/rmqstore/format/indexfile.py (chain walk, geometry detection and validation). Files are
  * `ByteSource`s: a probe reads the header, one slot and the entries its chain walk visits, and validation
  * samples a large file, so a remote file is never read whole unless its geometry must be searched for.
  */
object IndexFile {
  final val HeaderSize = Layout.IndexHeaderSize
  final val SlotSize = Layout.IndexSlotSize
  final val EntrySize = Layout.IndexEntrySize
  final val DefaultHashSlots = Layout.DefaultHashSlots
  final val DefaultIndexEntries = Layout.DefaultIndexEntries
  final val KeySeparator = "#"
  private final val MaxGeometryCandidates = 16

  /** `geometryProblem` checks every slot and entry of a file whose slot table and entries fit in this. */
  final val FullCheckBytes = 1 << 20

  /** Entries and slots `geometryProblem` samples in a larger file (plus the entries they link to). */
  final val GeometrySamples = 64

  /** The indexed string `topic#key` (`IndexService.buildKey`, §5.3). */
  def indexKey(topic: String, key: String): String = topic + KeySeparator + key

  /** 40 + 4*S + 20*N (§5.1). */
  def fileSize(hashSlots: Int, indexEntries: Int): Long =
    HeaderSize + SlotSize.toLong * hashSlots + EntrySize.toLong * indexEntries

  /** The 40-byte header (§5.1): `usedSlots` counts non-empty slots; `indexCount` = entries + 1 (0 on
    * disk before the first put).
    */
  final case class Header(
      beginTimestamp: Long,
      endTimestamp: Long,
      beginPhyOffset: Long,
      endPhyOffset: Long,
      usedSlots: Int,
      indexCount: Int
  ) {

    /** Number of entries in the file: indexCount - 1 (an on-disk 0 means none). */
    def entryCount: Int = math.max(indexCount - 1, 0)
  }

  /** Read the header from the first 40 bytes (§5.1). */
  def header(data: ByteSource): Header = {
    if (data.length < HeaderSize)
      throw new IllegalArgumentException(s"${data.length} bytes are too short for the $HeaderSize-byte index header")
    val h = data.bytes(0, HeaderSize)
    Header(h.getLong(0), h.getLong(8), h.getLong(16), h.getLong(24), h.getInt(32), h.getInt(36))
  }

  private def slotAt(slotNo: Int): Long = HeaderSize + SlotSize.toLong * slotNo

  /** Read-only view of one whole index file with `hashSlots` S and `indexEntries` N (§5.1). */
  final class View(data: ByteSource, val hashSlots: Int, val indexEntries: Int) {
    if (hashSlots <= 0 || indexEntries <= 0 || data.length != fileSize(hashSlots, indexEntries))
      throw new IllegalArgumentException(
        s"index file of ${data.length} bytes does not match $hashSlots slots and $indexEntries entries " +
          s"(${fileSize(hashSlots, indexEntries)} bytes)"
      )
    private val entryBase = HeaderSize + SlotSize.toLong * hashSlots
    val header: Header = IndexFile.header(data)

    /** Entry number of the newest entry in slot `slotNo` (0 = empty). */
    def slot(slotNo: Int): Int = data.getInt(slotAt(slotNo))

    def entryHash(number: Int): Int = data.getInt(entryAt(number))
    def entryPhy(number: Int): Long = data.getLong(entryAt(number) + 4)
    def entryTimeDiff(number: Int): Int = data.getInt(entryAt(number) + 12)
    def entryPrev(number: Int): Int = data.getInt(entryAt(number) + 16)

    private def entryAt(number: Int): Long = {
      if (number < 0 || number >= indexEntries)
        throw new IllegalArgumentException(s"entry number $number outside the entry area (0..${indexEntries - 1})")
      entryBase + EntrySize.toLong * number
    }

    /** Read the slots of these key hashes, then the newest entries they point at, in two batches (a remote
      * source keeps them for the probes that follow): many probes cost two rounds of requests, not one per
      * chain step.
      */
    def prefetch(keyHashes: Seq[Int]): Unit = {
      val slots = keyHashes.map(h => java.lang.Math.floorMod(h, hashSlots)).distinct
      data.prefetch(slots.map(s => (slotAt(s), SlotSize)))
      val newest = slots.map(slot).filter(n => n > 0 && n < indexEntries && n < header.indexCount)
      data.prefetch(newest.map(n => (entryAt(n), EntrySize)))
    }

    /** Physical offsets whose entry hash equals `keyHash`, newest first (`selectPhyOffset`, §5.6).
      *
      * Entry time = beginTimestamp + timeDiff*1000 must lie in [beginMs, endMs]; the walk stops at an
      * entry older than beginMs. No result cap. A chain that revisits an entry or leaves the file ends
      * the walk, so corrupt chains terminate. Hash collisions are included: confirm every candidate.
      */
    def candidates(keyHash: Int, beginMs: Long, endMs: Long): Array[Long] = {
      val indexCount = header.indexCount
      var current = slot(java.lang.Math.floorMod(keyHash, hashSlots))
      if (current <= 0 || current > indexCount || indexCount <= 1) return Array.emptyLongArray
      val found = Array.newBuilder[Long]
      val visited = new java.util.BitSet()
      var walking = true
      while (walking && current < indexEntries && !visited.get(current)) {
        visited.set(current)
        val timeDiff = entryTimeDiff(current)
        if (timeDiff < 0) walking = false
        else {
          val entryMs = header.beginTimestamp + timeDiff * 1000L
          if (entryHash(current) == keyHash && beginMs <= entryMs && entryMs <= endMs) found += entryPhy(current)
          val prev = entryPrev(current)
          if (prev <= 0 || prev > indexCount || prev == current || entryMs < beginMs) walking = false
          else current = prev
        }
      }
      found.result()
    }
  }

  /** Infer (hash slots S, index entries N) of an index file from its size and contents (§1.3, §5).
    *
    * 40 + 4S + 20N = size has many solutions. The broker defaults are taken when they fit the size and
    * the contents; otherwise every S allowed by the size is filtered by cheap checks (entry 1 and the
    * newest entry hold beginPhyOffset/endPhyOffset, entry #0 is zero, the newest entry's slot points at
    * it) and the survivors are validated (`geometryProblem`). Throws IllegalArgumentException naming the
    * reason when no or several geometries fit, or when the file has no entries to judge by.
    */
  def detectGeometry(data: ByteSource): (Int, Int) = {
    val size = data.length
    val h = header(data)
    if (
      size == fileSize(DefaultHashSlots, DefaultIndexEntries) &&
      geometryProblem(data, DefaultHashSlots, DefaultIndexEntries).isEmpty
    )
      return (DefaultHashSlots, DefaultIndexEntries)
    val body = size - HeaderSize
    if (body <= 0 || body % SlotSize != 0)
      throw new IllegalArgumentException(s"index file size $size is not 40 + 4*S + 20*N for any S, N")
    if (h.indexCount <= 1)
      throw new IllegalArgumentException(
        s"index file of $size bytes has no entries (indexCount ${h.indexCount}); " +
          "its slot and entry counts cannot be inferred, pass them explicitly"
      )
    val mem = data.inMemory // the candidates are checked at strided places all over the file
    val slots = slotCandidates(mem, h, body)
    if (slots.length > MaxGeometryCandidates)
      throw new IllegalArgumentException(
        s"index file geometry is ambiguous: ${slots.length} slot counts pass the quick checks " +
          s"(S=${slots.take(5).mkString(", ")}, ...); pass hash slots and index entries explicitly"
      )
    val judged = slots.map { s =>
      val n = ((body - SlotSize.toLong * s) / EntrySize).toInt
      (s, n, geometryProblem(mem, s, n))
    }
    val fitting = judged.collect { case (s, n, None) => (s, n) }
    if (fitting.length == 1) fitting.head
    else if (fitting.isEmpty) {
      val reasons = judged.collect { case (s, _, Some(p)) => s"S=$s: $p" }.take(3)
      val detail =
        if (reasons.isEmpty) "no slot count places the header's begin/end offsets in entries"
        else reasons.mkString("; ")
      throw new IllegalArgumentException(s"no hash-slot/entry geometry fits this $size-byte index file ($detail)")
    } else {
      val shown = fitting.take(5).map { case (s, n) => s"S=$s N=$n" }.mkString(", ")
      throw new IllegalArgumentException(
        s"index file geometry is ambiguous: ${fitting.length} geometries fit ($shown); " +
          "pass hash slots and index entries explicitly"
      )
    }
  }

  // Slot counts S allowed by the size whose entry area agrees with the header.
  private def slotCandidates(data: ByteSource, h: Header, body: Long): Array[Int] = {
    val count = h.indexCount - 1
    val s0 = { val r = ((body / SlotSize) % 5).toInt; if (r == 0) 5 else r }
    val maxSlots = (body - EntrySize.toLong * (count + 1)) / SlotSize
    if (maxSlots < s0) return Array.emptyIntArray
    val out = Array.newBuilder[Int]
    var s = s0.toLong
    while (s <= maxSlots) {
      val entryArea = HeaderSize + SlotSize * s
      val newest = entryArea + EntrySize.toLong * count
      if (
        data.getLong(entryArea + EntrySize + 4) == h.beginPhyOffset &&
        data.getLong(newest + 4) == h.endPhyOffset && zeroEntry(data, entryArea)
      ) {
        val newestHash = data.getInt(newest)
        if (newestHash >= 0 && data.getInt(slotAt((newestHash % s).toInt)) == count) out += s.toInt
      }
      s += 5
    }
    out.result()
  }

  private def zeroEntry(data: ByteSource, at: Long): Boolean =
    data.getLong(at) == 0 && data.getLong(at + 8) == 0 && data.getInt(at + 16) == 0

  /** Why (S, N) cannot be this file's geometry, None when every checked structural rule holds (§5.1-§5.5).
    *
    * Rules: header counts within the geometry, entry #0 empty, entry 1 / the newest entry hold
    * beginPhyOffset / endPhyOffset, entries have non-negative hash and time, phy offsets grow, every
    * link points at an older entry of the same slot, a slot points at an entry of its own slot no newer
    * than the newest, an entry's slot points at it or a newer entry. A file whose slot table and
    * entries fit in `FullCheckBytes` is checked completely (including the used-slot count); a larger
    * one at the first, the newest and `GeometrySamples` evenly spread entries and slots.
    */
  def geometryProblem(data: ByteSource, hashSlots: Int, indexEntries: Int): Option[String] = {
    val expected = fileSize(hashSlots, indexEntries)
    if (hashSlots <= 0 || indexEntries <= 0 || data.length != expected)
      return Some(s"${data.length} bytes do not match $hashSlots slots and $indexEntries entries ($expected bytes)")
    val h = header(data)
    if (h.indexCount < 0 || h.indexCount > indexEntries)
      return Some(s"indexCount ${h.indexCount} outside 0..$indexEntries")
    val count = h.entryCount
    if (h.usedSlots < 0 || h.usedSlots > math.min(hashSlots, count))
      return Some(s"hashSlotCount ${h.usedSlots} outside 0..${math.min(hashSlots, count)}")
    val entryBase = HeaderSize + SlotSize.toLong * hashSlots
    def entryAt(e: Int): Long = entryBase + EntrySize.toLong * e
    def slot(i: Int): Int = data.getInt(slotAt(i))
    def hash(e: Int): Int = data.getInt(entryAt(e))
    val full = SlotSize.toLong * hashSlots + EntrySize.toLong * count <= FullCheckBytes
    val (numbers, slotNumbers) =
      if (full) {
        data.prefetch(Seq((slotAt(0), SlotSize * hashSlots), (entryBase, EntrySize * (count + 1))))
        ((1 to count).toArray, (0 until hashSlots).toArray)
      } else {
        val sampled = (if (count > 0) spread(1, count) else Array.emptyIntArray, spread(0, hashSlots - 1))
        data.prefetch(((0 +: sampled._1).map(e => (entryAt(e), EntrySize)) ++
          sampled._2.map(i => (slotAt(i), SlotSize))).toSeq)
        sampled
      }
    if (!zeroEntry(data, entryBase)) return Some("entry #0 is not empty")
    if (full) {
      val used = (0 until hashSlots).count(slot(_) != 0)
      if (used != h.usedSlots) return Some(s"$used non-empty slots but the header says ${h.usedSlots}")
    }
    if (count > 0) {
      val phys = numbers.map(e => data.getLong(entryAt(e) + 4))
      if (phys.head != h.beginPhyOffset || phys.last != h.endPhyOffset)
        return Some("first/last entry offsets differ from the header's begin/end offsets")
      if (numbers.exists(e => hash(e) < 0 || data.getInt(entryAt(e) + 12) < 0))
        return Some("an entry has a negative key hash or time difference")
      if (phys.indices.drop(1).exists(i => phys(i) < phys(i - 1)))
        return Some("entry offsets decrease although entries are added in log order")
      val prevs = numbers.map(e => data.getInt(entryAt(e) + 16))
      val bad = numbers.indices.find(i => prevs(i) < 0 || prevs(i) >= numbers(i))
      if (bad.isDefined)
        return Some(s"entry ${numbers(bad.get)} chains to entry ${prevs(bad.get)}, not to an older entry")
      if (!full) // what the samples link to, in one batch
        data.prefetch(
          (numbers.map(e => (slotAt(hash(e) % hashSlots), SlotSize)) ++ prevs.filter(_ > 0).map(e =>
            (entryAt(e), EntrySize)
          ) ++
            slotNumbers.map(slot).filter(v => v > 0 && v <= count).map(e => (entryAt(e), EntrySize))).toSeq
        )
      val misplaced = numbers.exists { e =>
        val pointed = slot(hash(e) % hashSlots)
        pointed < e || pointed > count
      }
      if (misplaced) return Some("an entry's slot does not point at it or at a newer entry")
      val crossLinked = numbers.indices.exists(i =>
        prevs(i) > 0 &&
          java.lang.Math.floorMod(hash(prevs(i)), hashSlots) != hash(numbers(i)) % hashSlots
      )
      if (crossLinked) return Some("an entry chains to an entry of another slot")
    }
    val values = slotNumbers.map(slot)
    if (values.exists(v => v < 0 || v > count)) return Some(s"a slot value lies outside 0..$count")
    val foreign = slotNumbers.indices.exists(i =>
      values(i) > 0 && java.lang.Math.floorMod(hash(values(i)), hashSlots) != slotNumbers(i)
    )
    if (foreign) return Some("a slot points at an entry whose key hash belongs to another slot")
    None
  }

  /** `GeometrySamples` evenly spread numbers in [first, last], both ends included, ascending, distinct. */
  private def spread(first: Int, last: Int): Array[Int] =
    (0 until GeometrySamples)
      .map(i =>
        if (i == GeometrySamples - 1) last else (first + (last - first).toDouble * i / (GeometrySamples - 1)).toInt
      )
      .distinct
      .sorted
      .toArray
}
