package io.rmqstore.spark.store

import org.scalatest.funsuite.AnyFunSuite

/** The cache-directory rule both engines follow (tests/test_cachedir.py checks the same cases on Python). */
class CacheDirSuite extends AnyFunSuite {
  private def rootWith(vars: (String, String)*): String =
    SegmentCache.rootFor(vars.toMap.get, "/account/home").toString

  test("RMQSTORE_CACHE_DIR, else XDG_CACHE_HOME/rmqstore, else HOME/.cache/rmqstore, else user.home") {
    val all = Seq("RMQSTORE_CACHE_DIR" -> "/explicit", "XDG_CACHE_HOME" -> "/xdg", "HOME" -> "/env/home")
    assert(rootWith(all: _*) == "/explicit")
    assert(rootWith(all.drop(1): _*) == "/xdg/rmqstore")
    assert(rootWith(all.drop(2): _*) == "/env/home/.cache/rmqstore") // $HOME wins over user.home
    assert(rootWith() == "/account/home/.cache/rmqstore")
    assert(rootWith(
      "RMQSTORE_CACHE_DIR" -> "",
      "XDG_CACHE_HOME" -> "",
      "HOME" -> ""
    ) == "/account/home/.cache/rmqstore")
  }

  test("this process follows the rule with its own environment") {
    val env = (name: String) => Option(System.getenv(name))
    assert(SegmentCache.root == SegmentCache.rootFor(env, System.getProperty("user.home")))
  }
}
