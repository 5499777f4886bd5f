package io.rmqstore.spark

import java.time.{LocalDateTime, OffsetDateTime, ZoneOffset}
import java.time.format.DateTimeParseException
import java.util.Locale

import scala.jdk.CollectionConverters._
import scala.util.Try

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import format.Compression
import store.Names.{closeMatches, repr}
import _root_.io.rmqstore.spark.io.StoreFileSystem

/** An invalid option value; the message starts with the option's name (python/rmqstore/spark/options.py). */
final class RmqOptionException(val option: String, problem: String)
    extends IllegalArgumentException(s"rmqstore option '$option': $problem")

/** A parsed startingOffsets / endingOffsets value. */
sealed trait OffsetSpec extends Serializable
object OffsetSpec {
  case object Earliest extends OffsetSpec
  case object Latest extends OffsetSpec
  final case class Physical(offset: Long) extends OffsetSpec
  final case class Queues(queues: Map[String, Map[Int, Long]]) extends OffsetSpec
  final case class Group(group: String) extends OffsetSpec
}

/** Hadoop settings for s3:// stores made from the s3.* options (and the driver's AWS credentials): the
  * values are secrets, so `toString` shows the setting names only.
  */
final case class S3Settings(hadoop: Map[String, String]) {
  override def toString: String = s"S3Settings(${hadoop.keys.toSeq.sorted.mkString(", ")})"
}

/** All options of one read, validated: the same names, defaults and errors as the Python engine's
  * `parse_options` (python/rmqstore/spark/options.py is the one table; keep both in step). Paths and
  * broker names are parallel; local paths are absolute (made so where the options were parsed: the
  * driver), URIs as given. `named`: the options the user gave (canonical names).
  */
final case class RmqOptions(
    paths: IndexedSeq[String],
    brokerNames: IndexedSeq[String],
    startingOffsets: OffsetSpec = OffsetSpec.Earliest,
    endingOffsets: OffsetSpec = OffsetSpec.Latest,
    startingTimestamp: Option[Long] = None,
    endingTimestamp: Option[Long] = None,
    topics: Option[IndexedSeq[String]] = None,
    keys: Option[IndexedSeq[String]] = None,
    minPartitions: Option[Int] = None,
    maxBytesPerPartition: Long = RmqOptions.DefaultMaxBytesPerPartition,
    verifyCrc: Boolean = true,
    mode: String = "FAILFAST",
    decompress: Boolean = true,
    indexGeometry: Option[(Int, Int)] = None,
    pushdown: Boolean = true,
    keyProbePartitionThreshold: Int = RmqOptions.DefaultKeyProbePartitionThreshold,
    staleReaderCheck: Boolean = true,
    statsDir: Option[String] = None,
    failOnDataLoss: Boolean = true,
    maxOffsetsPerTrigger: Option[Long] = None,
    maxBytesPerTrigger: Option[Long] = None,
    maxMessageSize: Int = Compression.MaxMessageSize,
    s3: S3Settings = S3Settings(Map.empty),
    named: Set[String] = Set.empty
) {
  def permissive: Boolean = mode == "PERMISSIVE"
}

object RmqOptions {
  val Path = "path"
  val Paths = "paths"
  val BrokerNames = "brokerNames"
  val StartingOffsets = "startingOffsets"
  val EndingOffsets = "endingOffsets"
  val StartingTimestamp = "startingTimestamp"
  val EndingTimestamp = "endingTimestamp"
  val Topics = "topics"
  val Keys = "keys"
  val MinPartitions = "minPartitions"
  val MaxBytesPerPartition = "maxBytesPerPartition"
  val VerifyCrc = "verifyCrc"
  val Mode = "mode"
  val Decompress = "decompress"
  val IndexHashSlots = "indexHashSlots"
  val IndexEntries = "indexEntries"
  val Pushdown = "pushdown"
  val KeyProbePartitionThreshold = "keyProbePartitionThreshold"
  val StaleReaderCheck = "staleReaderCheck"
  val StatsDir = "statsDir"
  val FailOnDataLoss = "failOnDataLoss"
  val MaxOffsetsPerTrigger = "maxOffsetsPerTrigger"
  val MaxBytesPerTrigger = "maxBytesPerTrigger"
  val MaxMessageSize = "maxMessageSize"

  /** The s3.* options and the S3A setting each sets (python/rmqstore/spark/options.py `S3_OPTIONS`). Their
    * values are never shown.
    */
  val S3Options: Seq[(String, String)] = Seq(
    "s3.accessKey" -> "fs.s3a.access.key",
    "s3.secretKey" -> "fs.s3a.secret.key",
    "s3.sessionToken" -> "fs.s3a.session.token",
    "s3.region" -> "fs.s3a.endpoint.region",
    "s3.endpoint" -> "fs.s3a.endpoint",
    "s3.scheme" -> "fs.s3a.connection.ssl.enabled"
  )

  /** AWS SDK environment variables of the credentials the driver pins for executors (`S3_CREDENTIAL_ENV`). */
  private val S3CredentialEnv: Seq[(String, String)] = Seq(
    "s3.accessKey" -> "AWS_ACCESS_KEY_ID",
    "s3.secretKey" -> "AWS_SECRET_ACCESS_KEY",
    "s3.sessionToken" -> "AWS_SESSION_TOKEN"
  )

  val AllOptions: Seq[String] = Seq(
    Path,
    Paths,
    BrokerNames,
    StartingOffsets,
    EndingOffsets,
    StartingTimestamp,
    EndingTimestamp,
    Topics,
    Keys,
    MinPartitions,
    MaxBytesPerPartition,
    VerifyCrc,
    Mode,
    Decompress,
    IndexHashSlots,
    IndexEntries,
    Pushdown,
    KeyProbePartitionThreshold,
    StaleReaderCheck,
    StatsDir,
    FailOnDataLoss,
    MaxOffsetsPerTrigger,
    MaxBytesPerTrigger,
    MaxMessageSize
  ) ++ S3Options.map(_._1)
  private val byLower: Map[String, String] = AllOptions.map(n => n.toLowerCase(Locale.ROOT) -> n).toMap

  val DefaultMaxBytesPerPartition: Long = 128L * 1024 * 1024
  val DefaultKeyProbePartitionThreshold = 64
  val Modes: Seq[String] = Seq("FAILFAST", "PERMISSIVE")
  val EarliestQueueOffset: Long = -2L
  val LatestQueueOffset: Long = -1L

  private val mapper = new ObjectMapper()

  private def fail(option: String, problem: String): Nothing = throw new RmqOptionException(option, problem)

  /** Validate the raw (case-insensitive, string-valued) options of a read. */
  def parse(options: java.util.Map[String, String], requirePath: Boolean = true): RmqOptions = {
    val raw = canonicalNames(options.asScala.toMap)
    val givenPaths = parsePaths(raw, requirePath)
    val paths = givenPaths.map(StoreFileSystem.absoluteLocation)
    if (paths.distinct.size != paths.size)
      fail(Paths, s"the same store is listed twice: ${givenPaths.map(repr).mkString("[", ", ", "]")}")
    val starting = parseOffsets(StartingOffsets, raw.getOrElse(StartingOffsets, "earliest"))
    val ending = parseOffsets(EndingOffsets, raw.getOrElse(EndingOffsets, "latest"))
    val hashSlots = optionalInt(raw, IndexHashSlots, 1)
    val indexEntries = optionalInt(raw, IndexEntries, 2)
    if (hashSlots.isEmpty != indexEntries.isEmpty) {
      val missing = if (indexEntries.isEmpty) IndexEntries else IndexHashSlots
      fail(missing, s"must be given together with '$IndexHashSlots'/'$IndexEntries'")
    }
    val startingTs = optionalTimestamp(raw, StartingTimestamp)
    val endingTs = optionalTimestamp(raw, EndingTimestamp)
    for (s <- startingTs; e <- endingTs if e < s) fail(EndingTimestamp, s"$e is before $StartingTimestamp $s")
    (starting, ending) match {
      case (OffsetSpec.Physical(s), OffsetSpec.Physical(e)) if e < s =>
        fail(EndingOffsets, s"$e is before $StartingOffsets $s")
      case _ =>
    }
    val mode = raw.getOrElse(Mode, "FAILFAST").trim.toUpperCase(Locale.ROOT)
    if (!Modes.contains(mode)) fail(Mode, s"${repr(raw(Mode))} is not one of ${Modes.mkString(", ")}")
    RmqOptions(
      paths = paths,
      brokerNames = parseBrokerNames(raw, givenPaths),
      startingOffsets = starting,
      endingOffsets = ending,
      startingTimestamp = startingTs,
      endingTimestamp = endingTs,
      topics = optionalList(raw, Topics),
      keys = optionalList(raw, Keys),
      minPartitions = optionalInt(raw, MinPartitions, 1),
      maxBytesPerPartition = optionalSize(raw, MaxBytesPerPartition).getOrElse(DefaultMaxBytesPerPartition),
      verifyCrc = bool(raw, VerifyCrc, default = true),
      mode = mode,
      decompress = bool(raw, Decompress, default = true),
      indexGeometry = for (s <- hashSlots; e <- indexEntries) yield (s, e),
      pushdown = bool(raw, Pushdown, default = true),
      keyProbePartitionThreshold =
        optionalInt(raw, KeyProbePartitionThreshold, 1).getOrElse(DefaultKeyProbePartitionThreshold),
      staleReaderCheck = bool(raw, StaleReaderCheck, default = true),
      statsDir = raw.get(StatsDir).filter(_.nonEmpty),
      failOnDataLoss = bool(raw, FailOnDataLoss, default = true),
      maxOffsetsPerTrigger = optionalInt(raw, MaxOffsetsPerTrigger, 1).map(_.toLong),
      maxBytesPerTrigger = optionalSize(raw, MaxBytesPerTrigger),
      // a JVM array holds at most Int.MaxValue bytes, so a larger cap is the same as Int.MaxValue
      maxMessageSize =
        optionalSize(raw, MaxMessageSize).fold(Compression.MaxMessageSize)(v => math.min(v, Int.MaxValue.toLong).toInt),
      s3 = s3Settings(raw, paths),
      named = raw.keySet
    )
  }

  /** Parse a startingOffsets / endingOffsets value; errors name `option`. */
  def parseOffsets(option: String, text: String): OffsetSpec = {
    val value = text.trim
    val lowered = value.toLowerCase(Locale.ROOT)
    if (lowered == "earliest") OffsetSpec.Earliest
    else if (lowered == "latest") OffsetSpec.Latest
    else if (lowered.startsWith("group:")) {
      val group = value.substring("group:".length).trim
      if (group.isEmpty) fail(option, "'group:' needs a consumer group name, e.g. group:MyConsumerGroup")
      OffsetSpec.Group(group)
    } else if (value.nonEmpty && value.forall(_.isDigit) && Try(value.toLong).isSuccess)
      OffsetSpec.Physical(value.toLong)
    else if (value.startsWith("{")) OffsetSpec.Queues(parseQueueJson(option, value))
    else
      fail(
        option,
        s"${repr(text)} is not 'earliest', 'latest', a physical offset, " +
          "'group:<consumerGroup>' or JSON like {\"TopicA\":{\"0\":23,\"1\":-2}}"
      )
  }

  private def parseQueueJson(option: String, text: String): Map[String, Map[Int, Long]] = {
    val doc: JsonNode =
      try mapper.readTree(text)
      catch { case e: Exception => fail(option, s"invalid JSON (${e.getMessage.linesIterator.next()})") }
    if (doc == null || !doc.isObject || doc.isEmpty)
      fail(option, "JSON must be a non-empty object {topic: {queueId: offset}}")
    doc.properties().asScala.map { entry =>
      val topic = entry.getKey
      val queues = entry.getValue
      if (!queues.isObject) fail(option, s"topic ${repr(topic)}: expected an object {queueId: offset}")
      topic -> queues.properties().asScala.map { q =>
        val queueId = q.getKey
        if (queueId.isEmpty || !queueId.forall(_.isDigit))
          fail(option, s"topic ${repr(topic)}: queue id ${repr(queueId)} is not a number")
        val offset = q.getValue
        if (!offset.isIntegralNumber || offset.asLong < EarliestQueueOffset)
          fail(
            option,
            s"topic ${repr(topic)} queue $queueId: offset $offset must be " +
              ">= 0, -2 (earliest) or -1 (latest)"
          )
        queueId.toInt -> offset.asLong
      }.toMap
    }.toMap
  }

  private def canonicalNames(options: Map[String, String]): Map[String, String] =
    options.map { case (name, value) =>
      val canonical = byLower.getOrElse(
        name.toLowerCase(Locale.ROOT), {
          val hint = closeMatches(name.toLowerCase(Locale.ROOT), byLower.keys.toSeq, 1).headOption
            .map(c => s"; did you mean '${byLower(c)}'?").getOrElse("")
          fail(name, s"unknown option$hint Known options: ${AllOptions.mkString(", ")}")
        }
      )
      canonical -> Option(value).getOrElse("")
    }

  private def parsePaths(raw: Map[String, String], requirePath: Boolean): IndexedSeq[String] = {
    val named = raw.get(Path).map(_.trim).filter(_.nonEmpty)
    val paths: IndexedSeq[String] = raw.get(Paths) match {
      case Some(text) =>
        val listed = Try(mapper.readTree(text)).toOption match {
          case Some(node) if node != null && node.isArray =>
            node.elements().asScala.map { e =>
              if (!e.isTextual) fail(Paths, "must be a JSON list of store paths, e.g. [\"/a/store\",\"/b/store\"]")
              e.asText
            }.toIndexedSeq
          case Some(node) if node != null && !node.isTextual && !node.isMissingNode =>
            fail(Paths, "must be a JSON list of store paths, e.g. [\"/a/store\",\"/b/store\"]")
          case _ => text.split(",", -1).toIndexedSeq
        }
        named.toIndexedSeq ++ listed.map(_.trim).filter(_.nonEmpty)
      case None => named.toIndexedSeq
    }
    if (paths.isEmpty && requirePath)
      fail(Path, "no store directory given: use .load('/path/to/store') or .option('path', ...)")
    paths
  }

  /** The s3.* options as S3A settings, plus the environment's AWS credentials (s3:// only), like
    * `_storage_options`: pinned on the driver so that executors read with them too.
    */
  private def s3Settings(raw: Map[String, String], paths: IndexedSeq[String]): S3Settings = {
    def environ(variable: String): Option[String] = Option(System.getenv(variable)).filter(_.nonEmpty)
    val typed = S3Options.collect { case (name, _) if raw.contains(name) => name -> raw(name) }.toMap
    val anyS3 = paths.exists(StoreFileSystem.isS3Uri)
    if (typed.nonEmpty && !anyS3)
      fail(S3Options.map(_._1).find(typed.contains).get, "applies to s3:// store paths only")
    if (typed.contains("s3.accessKey") != typed.contains("s3.secretKey"))
      fail(
        if (typed.contains("s3.accessKey")) "s3.secretKey" else "s3.accessKey",
        "must be given together with 's3.accessKey'/'s3.secretKey'"
      )
    val pinned =
      if (!anyS3 || typed.contains("s3.accessKey") || environ("AWS_ACCESS_KEY_ID").isEmpty) typed
      else typed ++ S3CredentialEnv.flatMap { case (name, variable) => environ(variable).map(name -> _) }
    val hadoop = S3Options.collect {
      case ("s3.scheme", setting) if pinned.contains("s3.scheme") =>
        setting -> (!pinned("s3.scheme").trim.equalsIgnoreCase("http")).toString
      case (name, setting) if pinned.contains(name) => setting -> pinned(name)
    }.toMap
    val temporary =
      if (pinned.contains("s3.sessionToken"))
        Map("fs.s3a.aws.credentials.provider" -> "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider")
      else Map.empty
    // pyarrow's S3FileSystem addresses buckets by path; S3A by host name, which an endpoint such as
    // 127.0.0.1:9000 (MinIO, moto) cannot serve: with s3.endpoint both engines address by path.
    val pathStyle = if (pinned.contains("s3.endpoint")) Map("fs.s3a.path.style.access" -> "true") else Map.empty
    S3Settings(hadoop ++ temporary ++ pathStyle)
  }

  private def parseBrokerNames(raw: Map[String, String], paths: IndexedSeq[String]): IndexedSeq[String] =
    raw.get(BrokerNames) match {
      case None => paths.map(p => if (p.replaceAll("/+$", "").isEmpty) p else p.replaceAll("/+$", ""))
      case Some(text) =>
        val names = text.split(",", -1).map(_.trim).toIndexedSeq
        if (names.size != paths.size || names.exists(_.isEmpty))
          fail(BrokerNames, s"needs one non-empty name per store path (${paths.size}), got ${repr(text)}")
        names
    }

  /** A comma-separated list, or a JSON list of strings (for values that contain commas). */
  private def optionalList(raw: Map[String, String], option: String): Option[IndexedSeq[String]] =
    raw.get(option).map { value =>
      val text = value.trim
      val items: Seq[String] =
        if (text.startsWith("[")) {
          val node =
            try mapper.readTree(text)
            catch { case e: Exception => fail(option, s"invalid JSON list (${e.getMessage.linesIterator.next()})") }
          if (!node.isArray || !node.elements().asScala.forall(_.isTextual))
            fail(option, "JSON value must be a list of strings")
          node.elements().asScala.map(_.asText).toSeq
        } else text.split(",", -1).toSeq
      val values = items.map(_.trim).filter(_.nonEmpty).distinct.toIndexedSeq
      if (values.isEmpty) fail(option, "empty list")
      values
    }

  private def bool(raw: Map[String, String], option: String, default: Boolean): Boolean =
    raw.get(option) match {
      case None => default
      case Some(v) =>
        v.trim.toLowerCase(Locale.ROOT) match {
          case "true" | "1" | "yes" => true
          case "false" | "0" | "no" => false
          case _ => fail(option, s"${repr(v)} is not true or false")
        }
    }

  private def optionalInt(raw: Map[String, String], option: String, minimum: Int): Option[Int] =
    raw.get(option).map { v =>
      val value = Try(v.trim.toInt).getOrElse(fail(option, s"${repr(v)} is not an integer"))
      if (value < minimum) fail(option, s"$value is less than $minimum")
      value
    }

  private val sizeUnits: Map[String, Long] = Map(
    "" -> 1L,
    "b" -> 1L,
    "k" -> (1L << 10),
    "kb" -> (1L << 10),
    "m" -> (1L << 20),
    "mb" -> (1L << 20),
    "g" -> (1L << 30),
    "gb" -> (1L << 30)
  )
  private val SizePattern = """(\d+)\s*([a-z]*)""".r

  /** A byte count: `1048576`, `512k`, `128m`, `2g` (binary units). */
  private def optionalSize(raw: Map[String, String], option: String): Option[Long] =
    raw.get(option).map { v =>
      val value = v.trim.toLowerCase(Locale.ROOT) match {
        case SizePattern(digits, unit) if sizeUnits.contains(unit) && Try(digits.toLong).isSuccess =>
          digits.toLong * sizeUnits(unit)
        case _ => fail(option, s"${repr(v)} is not a byte size such as 1048576, 512k, 128m or 2g")
      }
      if (value < 1) fail(option, "must be at least 1 byte")
      value
    }

  /** Epoch milliseconds (like Kafka's option), or an ISO-8601 time (UTC unless it has an offset). */
  private def optionalTimestamp(raw: Map[String, String], option: String): Option[Long] =
    raw.get(option).map { v =>
      val text = v.trim
      val value =
        if (text.matches("-?\\d+")) text.toLong
        else
          try Try(OffsetDateTime.parse(text).toInstant.toEpochMilli)
              .getOrElse(LocalDateTime.parse(text.replace(' ', 'T')).toInstant(ZoneOffset.UTC).toEpochMilli)
          catch {
            case _: DateTimeParseException =>
              fail(option, s"${repr(text)} is not epoch milliseconds or an ISO-8601 time")
          }
      if (value < 0) fail(option, s"$value is negative")
      value
    }
}
