package io.rmqstore.spark.store

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/** `Store` is a facade over services that never see it (docs/design.md §1): no file of `store/` but
  * Store.scala names the `Store` class in its code (comments and string literals aside).
  */
class StoreFacadeSuite extends AnyFunSuite {
  private val StoreDir = Paths.get("connector/src/main/scala/io/rmqstore/spark/store")
  private val StoreName = """(?<![\w.$])Store(?![\w$])""".r

  /** `source` without its comments and string literals (each replaced by a space). */
  private def code(source: String): String = {
    val out = new StringBuilder
    var i = 0
    def at(s: String) = source.startsWith(s, i)
    def skipTo(end: String): Unit = {
      val j = source.indexOf(end, i)
      i = if (j < 0) source.length else j + end.length
      out += ' '
    }
    while (i < source.length) {
      if (at("//")) skipTo("\n")
      else if (at("/*")) { i += 2; skipTo("*/") }
      else if (at("\"\"\"")) { i += 3; skipTo("\"\"\"") }
      else if (at("\"")) {
        i += 1
        while (i < source.length && source(i) != '"') i += (if (source(i) == '\\') 2 else 1)
        i += 1
        out += ' '
      } else if (at("'\"'")) { i += 3; out += ' ' }
      else { out += source(i); i += 1 }
    }
    out.toString
  }

  private def refersToStore(source: String): Boolean = StoreName.findFirstIn(code(source)).isDefined

  test("the check sees a use of Store in code and ignores comments, strings and longer names") {
    assert(refersToStore("final class Tail(store: Store) {}"))
    assert(refersToStore("val s = Store.open(x)"))
    assert(!refersToStore("/** like `Store.scan` */ val a = \"kept per Store\" // Store\nval l: StoreLocation = x"))
    assert(!refersToStore("val c = '\"'; val s = \"\\\" Store\""))
  }

  test("no file of store/ but Store.scala refers to the Store class") {
    val files = Files.list(StoreDir).iterator.asScala.filter(_.toString.endsWith(".scala")).toSeq
    assert(files.exists(_.getFileName.toString == "Store.scala"))
    assert(refersToStore(read(StoreDir.resolve("Store.scala"))))
    val offending = files.filter(f => f.getFileName.toString != "Store.scala" && refersToStore(read(f)))
    assert(offending.isEmpty, s"services must take what they use, not the Store: ${offending.mkString(", ")}")
  }

  private def read(path: Path): String = new String(Files.readAllBytes(path), UTF_8)
}
