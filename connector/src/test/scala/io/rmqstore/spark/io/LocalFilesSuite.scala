package io.rmqstore.spark.io

import java.nio.MappedByteBuffer
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

/** The two access patterns of local files (python/rmqstore/io/local.py): finished files mapped for scans,
  * files opened `random` (point and planning reads) read by positioned reads of just the bytes asked for.
  * tests/spark/test_cold_reads.py proves what this buys: the pages a cold lookup brings into memory.
  */
class LocalFilesSuite extends AnyFunSuite {
  private def file(): String = {
    val path = Files.createTempFile("rmqstore-local-files", ".bin")
    path.toFile.deleteOnExit()
    Files.write(path, Array.tabulate[Byte](200)(_.toByte))
    path.toString
  }

  test("a finished file is mapped: reads are views of the map") {
    val f = new LocalFileSystem().open(file(), finished = true)
    try {
      assert(f.zeroCopy && f.isInstanceOf[MappedFile])
      assert(f.read(10, 5).get(0) == 10)
    } finally f.close()
  }

  test("a file opened random is read by positioned reads of the bytes asked for, finished or not") {
    for (finished <- Seq(true, false)) {
      val f = new LocalFileSystem().open(file(), finished, random = true)
      try {
        assert(!f.zeroCopy && f.isInstanceOf[PositionalFile])
        val buf = f.read(10, 5)
        assert(!buf.isInstanceOf[MappedByteBuffer] && buf.hasArray && buf.array.length == 5)
        assert((0 until 5).map(buf.get) == (10 until 15).map(_.toByte))
        assert(f.read(198, 10).limit() == 2)
      } finally f.close()
    }
  }
}
