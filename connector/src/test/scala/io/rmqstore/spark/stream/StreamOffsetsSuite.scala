package io.rmqstore.spark.stream

import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.store.Limits

/** Stream offsets without Spark: the JSON the Python engine writes (tests/streaming/test_offsets.py holds
  * the same cases for the Python engine), and how far limits let queues advance.
  */
class StreamOffsetsSuite extends AnyFunSuite {

  test("offsets JSON is json.dumps of the Python engine, keys in a fixed order, and round-trips") {
    val offset = RmqSourceOffset(
      Seq(
        "b" -> StoreOffset(queues = Map(("T2", 10) -> 4L, ("T1", 2) -> 7L, ("T1", 10) -> 1L)),
        "a" -> StoreOffset.log(4096)
      )
    )
    assert(
      offset.json ==
        """{"b": {"queueOffsets": {"T1": {"2": 7, "10": 1}, "T2": {"10": 4}}}, "a": {"commitLogOffset": 4096}}"""
    )
    assert(RmqSourceOffset.parse(offset.json, Seq("b", "a")) == offset)
    val missing = intercept[IllegalArgumentException](RmqSourceOffset.parse(offset.json, Seq("a", "c")))
    assert(missing.getMessage.contains("has no entry for store(s) ['c']"))
  }

  test("the parser takes any whitespace; the writer escapes like json.dumps (ensure_ascii)") {
    val spaced = "{\n  \"a\" :{ \"commitLogOffset\"\t: 12 },\r\n \"b\": {\"queueOffsets\": {\"T\": {\"3\" : 5}}} }"
    val parsed = RmqSourceOffset.parse(spaced, Seq("a", "b"))
    assert(parsed.json == """{"a": {"commitLogOffset": 12}, "b": {"queueOffsets": {"T": {"3": 5}}}}""")
    // json.dumps({"brö\"ker\\\n\x7f😀": {"commitLogOffset": 1}}) in Python:
    val broker = "brö\"ker\\\n\u007f\ud83d\ude00"
    val expected = "{\"br\\u00f6\\\"ker\\\\\\n\\u007f\\ud83d\\ude00\": {\"commitLogOffset\": 1}}"
    assert(RmqSourceOffset(Seq(broker -> StoreOffset.log(1))).json == expected)
    assert(RmqSourceOffset.parse(expected, Seq(broker)).json == expected)
  }

  test("topics are ordered by code point like Python's sorted(), not by UTF-16 unit") {
    val queues = Map(("\ud83d\ude00", 0) -> 1L, ("\uff5e", 0) -> 1L, ("Z", 0) -> 1L)
    assert(
      RmqSourceOffset(Seq("a" -> StoreOffset(queues = queues))).json ==
        "{\"a\": {\"queueOffsets\": {\"Z\": {\"0\": 1}, \"\\uff5e\": {\"0\": 1}, \"\\ud83d\\ude00\": {\"0\": 1}}}}"
    )
  }

  test("a document that is not an offset is an error naming the expected keys") {
    val e = intercept[IllegalArgumentException](RmqSourceOffset.parse("""{"a": {"position": 1}}""", Seq("a")))
    assert(e.getMessage.contains("expected 'commitLogOffset' or 'queueOffsets'"))
  }

  test("limits always admit one record") {
    assert(Limits(bytes = Some(10)).admits(0, 0, 500))
    assert(!Limits(bytes = Some(600)).admits(1, 500, 200))
    assert(!Limits(records = Some(2)).admits(2, 0, 1))
    assert(Limits(records = Some(3), bytes = Some(1000)).admits(2, 500, 500))
  }

  test("queue admission takes the oldest messages first") {
    val units = Map(
      ("T", 0) -> Seq(0L -> 100, 300L -> 100, 500L -> 100),
      ("T", 1) -> Seq(100L -> 200, 400L -> 100)
    )
    val starts = Map(("T", 0) -> 0L, ("T", 1) -> 0L)
    val ends = Map(("T", 0) -> 3L, ("T", 1) -> 2L)
    var read = 0
    def unitsOf(q: (String, Int), from: Long, until: Long): Seq[(Long, Int)] = {
      read += (until - from).toInt
      units(q).slice(from.toInt, until.toInt)
    }
    def admit(limits: Limits) = QueueAdmission.admit(starts, ends, unitsOf, limits)
    assert(admit(Limits.NoLimits) == ends)
    assert(admit(Limits(records = Some(3))) == Map(("T", 0) -> 2L, ("T", 1) -> 1L))
    assert(admit(Limits(bytes = Some(350))) == Map(("T", 0) -> 1L, ("T", 1) -> 1L))
    assert(admit(Limits(bytes = Some(1))) == Map(("T", 0) -> 1L, ("T", 1) -> 0L))
    read = 0
    admit(Limits(records = Some(1)))
    assert(read == 2, "at most `records` units are read per queue")
    // Queues already at their end stay; a queue not in `starts` starts at its end.
    assert(QueueAdmission.admit(Map(("T", 0) -> 3L), Map(("T", 0) -> 3L), unitsOf, Limits(records = Some(1))) ==
      Map(("T", 0) -> 3L))
  }
}
