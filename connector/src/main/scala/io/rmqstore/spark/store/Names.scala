package io.rmqstore.spark.store

/** How messages show names, as the Python engine's do (Python's `repr`, `difflib.get_close_matches`), so
  * both engines word errors alike.
  */
object Names {

  /** Python's repr of a string. */
  def repr(s: String): String =
    if (s.contains("'") && !s.contains("\"")) "\"" + s + "\"" else "'" + s.replace("'", "\\'") + "'"

  /** Up to `n` candidates with a similarity ratio of at least 0.6 to `word`, best first (ties: the
    * greater string first), like `difflib.get_close_matches(word, candidates, n)`.
    */
  def closeMatches(word: String, candidates: Seq[String], n: Int): Seq[String] =
    candidates.map(c => (similarity(word, c), c)).filter(_._1 >= 0.6)
      .sorted(Ordering[(Double, String)].reverse).take(n).map(_._2)

  /** Ratcliff/Obershelp ratio 2*M/T (difflib.SequenceMatcher.ratio without its junk heuristics). */
  private def similarity(a: String, b: String): Double = {
    def matches(a: String, b: String): Int = {
      if (a.isEmpty || b.isEmpty) return 0
      var (bestI, bestJ, bestLen) = (0, 0, 0)
      for (i <- a.indices; j <- b.indices) {
        var k = 0
        while (i + k < a.length && j + k < b.length && a(i + k) == b(j + k)) k += 1
        if (k > bestLen) { bestI = i; bestJ = j; bestLen = k }
      }
      if (bestLen == 0) 0
      else bestLen + matches(a.substring(0, bestI), b.substring(0, bestJ)) +
        matches(a.substring(bestI + bestLen), b.substring(bestJ + bestLen))
    }
    2.0 * matches(a, b) / (a.length + b.length)
  }
}
