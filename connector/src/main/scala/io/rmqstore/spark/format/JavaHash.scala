package io.rmqstore.spark.format

/** Java `String.hashCode` and the two hashes RocketMQ derives from it (docs/format.md §7, §5.3, §4.2). */
object JavaHash {

  /** Java `String.hashCode`: h = 31*h + c over UTF-16 code units, signed 32-bit (§7). */
  def stringHash(s: String): Int = s.hashCode

  /** IndexFile key hash: `Math.abs(key.hashCode())`, and 0 for Integer.MIN_VALUE (§5.3). */
  def indexKeyHash(key: String): Int = {
    val h = math.abs(key.hashCode)
    if (h < 0) 0 else h
  }

  /** ConsumeQueue tagsCode of a TAGS string: the sign-extended Java hash, 0 if absent or empty (§4.2). */
  def tagsCode(tags: String): Long = if (tags == null || tags.isEmpty) 0L else tags.hashCode.toLong
}
