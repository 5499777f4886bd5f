package io.rmqstore.spark.store

/** Where walks for the valid end (§2.12, design §4.2) of a segment got to, remembered per JVM, so that opening the
  * same store again resumes the walk instead of re-reading (and re-checking the BODYCRC of) every record
  * of the segment holding the end: a key lookup opens the store once per query.
  *
  * The broker only appends to the commit log, so records found valid stay valid while the file is the
  * same: an entry is keyed by the segment's identity (path, base offset, size, last-modified time) and
  * whether BODYCRC was checked, and used only when the last record it found is still a valid record
  * ending exactly at the remembered end (a file rewritten in place fails this check or has another
  * modified time). Everything after the remembered end is walked as usual. Walks like abnormal recovery
  * (`recovery`, §6.3: every record of a segment before the end they remember checked) are kept apart from the
  * walks from the index's end (which leave the records before it unchecked).
  */
private[store] object LogEndCache {

  /** Segments remembered (least recently used dropped first). */
  final val CachedSegments = 1 << 10

  private final case class Identity(
      path: String,
      baseOffset: Long,
      size: Long,
      modifiedMs: Long,
      crc: Boolean,
      recovery: Boolean
  )

  /** `lastStart`: position of the last valid record found; `end`: the position after it. */
  private final case class Reached(lastStart: Long, end: Long)

  private val reached = java.util.Collections.synchronizedMap(
    new java.util.LinkedHashMap[Identity, Reached](16, 0.75f, true) {
      override def removeEldestEntry(eldest: java.util.Map.Entry[Identity, Reached]): Boolean =
        size > CachedSegments
    }
  )

  private def identity(seg: Segment, crc: Boolean, recovery: Boolean) =
    Identity(seg.path, seg.baseOffset, seg.size, seg.modifiedMs, crc, recovery)

  /** Where a walk of `seg` for its valid end may start: the remembered end when `validSize(lastStart)`
    * (the check code of the record there) says the last remembered record is still whole and valid, else 0.
    */
  def resumeAt(seg: Segment, crc: Boolean, recovery: Boolean)(validSize: Long => Int): Long =
    Option(reached.get(identity(seg, crc, recovery))) match {
      case Some(r) if validSize(r.lastStart).toLong == r.end - r.lastStart => r.end
      case _ => 0L
    }

  /** Remember that the records of `seg` up to `end` are valid, the last one starting at `lastStart`. */
  def remember(seg: Segment, crc: Boolean, recovery: Boolean, lastStart: Long, end: Long): Unit =
    if (lastStart >= 0 && lastStart < end) reached.put(identity(seg, crc, recovery), Reached(lastStart, end))
}
