package io.rmqstore.spark

import java.time.{LocalDateTime, OffsetDateTime, ZoneOffset}
import java.time.format.DateTimeParseException
import java.util.Locale

import scala.jdk.CollectionConverters._
import scala.util.Try

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import store.Names.{closeMatches, repr}
import io.StoreFileSystem

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
  * `parse_options` (python/rmqstore/spark/options.py `parse_options`); the typed ones are `values`
  * (`ContractOptions`, generated from docs/contract.toml). Paths and broker names are parallel; local paths
  * are absolute (made so where the options were parsed: the driver), URIs as given. `named`: the options the
  * user gave (canonical names).
  */
final case class RmqOptions(
    paths: IndexedSeq[String],
    brokerNames: IndexedSeq[String],
    startingOffsets: OffsetSpec = OffsetSpec.Earliest,
    endingOffsets: OffsetSpec = OffsetSpec.Latest,
    indexGeometry: Option[(Int, Int)] = None,
    values: ContractOptions.Values = ContractOptions.Values(),
    s3: S3Settings = S3Settings(Map.empty),
    named: Set[String] = Set.empty
) extends ContractOptions.Fields {
  def permissive: Boolean = mode == "PERMISSIVE"
}

object RmqOptions extends ContractOptions.Names with ContractOptions.Parsers {
  import ContractOptions.Messages

  /** The s3.* options and the S3A setting each sets (python/rmqstore/spark/options.py `S3_OPTIONS`). Their
    * values are never shown.
    */
  val S3Options: Seq[(String, String)] = Seq(
    S3AccessKey -> "fs.s3a.access.key",
    S3SecretKey -> "fs.s3a.secret.key",
    S3SessionToken -> "fs.s3a.session.token",
    S3Region -> "fs.s3a.endpoint.region",
    S3Endpoint -> "fs.s3a.endpoint",
    S3Scheme -> "fs.s3a.connection.ssl.enabled"
  )

  /** AWS SDK environment variables of the credentials the driver pins for executors (`S3_CREDENTIAL_ENV`). */
  private val S3CredentialEnv: Seq[(String, String)] = Seq(
    S3AccessKey -> "AWS_ACCESS_KEY_ID",
    S3SecretKey -> "AWS_SECRET_ACCESS_KEY",
    S3SessionToken -> "AWS_SESSION_TOKEN"
  )

  private val byLower: Map[String, String] = AllOptions.map(n => n.toLowerCase(Locale.ROOT) -> n).toMap

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
    val hashSlots = integer(raw, IndexHashSlots, 1)
    val indexEntries = integer(raw, IndexEntries, 2)
    if (hashSlots.isEmpty != indexEntries.isEmpty) {
      val missing = if (indexEntries.isEmpty) IndexEntries else IndexHashSlots
      fail(missing, Messages.givenTogether(IndexHashSlots, IndexEntries))
    }
    val values = ContractOptions.parseValues(raw, this)
    for (s <- values.startingTimestamp; e <- values.endingTimestamp if e < s)
      fail(EndingTimestamp, Messages.before(e, StartingTimestamp, s))
    (starting, ending) match {
      case (OffsetSpec.Physical(s), OffsetSpec.Physical(e)) if e < s =>
        fail(EndingOffsets, Messages.before(e, StartingOffsets, s))
      case _ =>
    }
    RmqOptions(
      paths = paths,
      brokerNames = parseBrokerNames(raw, givenPaths),
      startingOffsets = starting,
      endingOffsets = ending,
      indexGeometry = for (s <- hashSlots; e <- indexEntries) yield (s, e),
      values = values,
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

  private def canonicalNames(options: Map[String, String]): Map[String, String] = {
    val given = options.keySet.map(_.toLowerCase(Locale.ROOT))
    options.filterNot { case (name, _) => addedBySpark(name.toLowerCase(Locale.ROOT), given) }.map {
      case (name, value) =>
        val canonical = byLower.getOrElse(
          name.toLowerCase(Locale.ROOT), {
            val hint = closeMatches(name.toLowerCase(Locale.ROOT), byLower.keys.toSeq, 1).headOption
              .map(c => Messages.didYouMean(byLower(c))).getOrElse("")
            fail(name, Messages.unknownOption(hint, AllOptions.mkString(", ")))
          }
        )
        canonical -> Option(value).getOrElse("")
    }
  }

  /** A table property Spark adds to the options of a table, or its copy of a given option
    * (`SparkTableProperties`, docs/contract.toml); names in lower case.
    */
  private def addedBySpark(name: String, given: Set[String]): Boolean =
    SparkTableProperties.contains(name) ||
      (name.startsWith(SparkOptionPrefix) && given.contains(name.drop(SparkOptionPrefix.length)))

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
    paths.map(StoreFileSystem.hadoopFilePath)
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
    if (typed.contains(S3AccessKey) != typed.contains(S3SecretKey))
      fail(
        if (typed.contains(S3AccessKey)) S3SecretKey else S3AccessKey,
        Messages.givenTogether(S3AccessKey, S3SecretKey)
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
  def textList(raw: Map[String, String], option: String): Option[IndexedSeq[String]] =
    raw.get(option).map { value =>
      val text = value.trim
      val items: Seq[String] =
        if (text.startsWith("[")) {
          val node =
            try mapper.readTree(text)
            catch { case e: Exception => fail(option, Messages.invalidJsonList(e.getMessage.linesIterator.next())) }
          if (!node.isArray || !node.elements().asScala.forall(_.isTextual))
            fail(option, Messages.notStringList())
          node.elements().asScala.map(_.asText).toSeq
        } else text.split(",", -1).toSeq
      val values = items.map(_.trim).filter(_.nonEmpty).distinct.toIndexedSeq
      if (values.isEmpty) fail(option, Messages.emptyList())
      values
    }

  def boolean(raw: Map[String, String], option: String, default: Boolean): Boolean =
    raw.get(option) match {
      case None => default
      case Some(v) =>
        v.trim.toLowerCase(Locale.ROOT) match {
          case "true" | "1" | "yes" => true
          case "false" | "0" | "no" => false
          case _ => fail(option, Messages.notBool(repr(v)))
        }
    }

  def integer(raw: Map[String, String], option: String, minimum: Int): Option[Int] =
    raw.get(option).map { v =>
      val value = Try(v.trim.toInt).getOrElse(fail(option, Messages.notInteger(repr(v))))
      if (value < minimum) fail(option, Messages.lessThan(value, minimum))
      value
    }

  def long(raw: Map[String, String], option: String, minimum: Int): Option[Long] =
    integer(raw, option, minimum).map(_.toLong)

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
  def size(raw: Map[String, String], option: String): Option[Long] =
    raw.get(option).map { v =>
      val value = v.trim.toLowerCase(Locale.ROOT) match {
        case SizePattern(digits, unit) if sizeUnits.contains(unit) && Try(digits.toLong).isSuccess =>
          digits.toLong * sizeUnits(unit)
        case _ => fail(option, Messages.notSize(repr(v)))
      }
      if (value < 1) fail(option, Messages.sizeBelowOne())
      value
    }

  /** A byte count held in an Int: a JVM array holds at most Int.MaxValue bytes, so a larger value is the same
    * as Int.MaxValue.
    */
  def size32(raw: Map[String, String], option: String): Option[Int] =
    size(raw, option).map(v => math.min(v, Int.MaxValue.toLong).toInt)

  def text(raw: Map[String, String], option: String): Option[String] = raw.get(option).filter(_.nonEmpty)

  /** Epoch milliseconds (like Kafka's option), or an ISO-8601 time (UTC unless it has an offset). */
  def timestamp(raw: Map[String, String], option: String): Option[Long] =
    raw.get(option).map { v =>
      val text = v.trim
      val value =
        if (text.matches("-?\\d+")) text.toLong
        else
          try Try(OffsetDateTime.parse(text).toInstant.toEpochMilli)
              .getOrElse(LocalDateTime.parse(text.replace(' ', 'T')).toInstant(ZoneOffset.UTC).toEpochMilli)
          catch {
            case _: DateTimeParseException => fail(option, Messages.notTimestamp(repr(text)))
          }
      if (value < 0) fail(option, Messages.negative(value))
      value
    }

  def choice(raw: Map[String, String], option: String, default: String, choices: Seq[String]): String = {
    val value = raw.getOrElse(option, default).trim.toUpperCase(Locale.ROOT)
    if (!choices.contains(value)) fail(option, Messages.notChoice(repr(raw(option)), choices.mkString(", ")))
    value
  }
}
