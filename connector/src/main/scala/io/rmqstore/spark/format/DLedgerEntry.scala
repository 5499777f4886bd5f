package io.rmqstore.spark.format

import java.nio.ByteBuffer

/** DLedger entries around the records of a DLedger commit log (§2.13), like
  * python/rmqstore/format/dledger.py: the header before each record and its check.
  */
object DLedgerEntry {

  /** The header before each record (docs/contract.toml `DLEDGER_ENTRY_HEADER`). */
  final val Header = Layout.DledgerEntryHeader
  private val Magic = Layout.DledgerEntryMagic

  /** A DLedger blank (docs/contract.toml `DLEDGER_BLANK_MAGIC`). */
  final val BlankMagic = Layout.DledgerBlankMagic

  /** Why the bytes at `at` are not the DLedger header of a `size`-byte record right after it (like
    * `DLedgerMmapFileStore.recover`: magic, pos = `base` + at, size = body size + 48; the sizes not when `size`
    * is negative, a record not yet known); null when they are.
    */
  def problem(buf: ByteBuffer, at: Int, base: Long, size: Int): String =
    if (at < 0 || buf.limit() - at < Header) s"no room for a DLedger entry header at position $at"
    else if (buf.getInt(at) != Magic) s"DLedger entry at position $at: magic ${buf.getInt(at)}, not $Magic"
    else if (buf.getLong(at + 24) != base + at)
      s"DLedger entry at position $at: pos ${buf.getLong(at + 24)}, not its position ${base + at}"
    else if (size >= 0 && (buf.getInt(at + 4) != size + Header || buf.getInt(at + 44) != size))
      s"DLedger entry at position $at: size ${buf.getInt(at + 4)} / body size ${buf.getInt(at + 44)} do not " +
        s"frame a $size-byte record"
    else null
}
