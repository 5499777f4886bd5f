package io.rmqstore.spark

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths, StandardOpenOption}
import java.util.UUID

import com.fasterxml.jackson.databind.ObjectMapper

/** The `statsDir` diagnostics: one JSON line per plan (driver) and per task (executor), with the
  * Python engine's field names (python/rmqstore/spark/reader.py `_write_stats`), for tests and users
  * proving what a read touched.
  */
object StatsLog {
  private val mapper = new ObjectMapper()

  def write(dir: Option[String], record: Map[String, Any]): Unit = dir.foreach { d =>
    val directory = Paths.get(d)
    Files.createDirectories(directory)
    val json = mapper.writeValueAsString(toJava(record)) + "\n"
    Files.write(
      directory.resolve(s"jvm-${ProcessHandle.current().pid()}-${UUID.randomUUID()}.jsonl"),
      json.getBytes(StandardCharsets.UTF_8),
      StandardOpenOption.CREATE,
      StandardOpenOption.APPEND
    )
  }

  private def toJava(value: Any): Any = value match {
    case m: Map[_, _] =>
      val out = new java.util.LinkedHashMap[String, Any]()
      m.foreach { case (k, v) => out.put(String.valueOf(k), toJava(v)) }
      out
    case s: Iterable[_] =>
      val out = new java.util.ArrayList[Any]()
      s.foreach(v => out.add(toJava(v)))
      out
    case other => other
  }
}
