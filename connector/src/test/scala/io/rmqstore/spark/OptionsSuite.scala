package io.rmqstore.spark

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/** What RmqOptions hands the rest of the engine: absolute paths, S3A settings that are never shown. */
class OptionsSuite extends AnyFunSuite {
  private val Secret = "s3cr3t-jvm-do-not-print"
  private def parse(options: (String, String)*): RmqOptions = RmqOptions.parse(options.toMap.asJava)

  test("s3.* options become S3A settings, s3:// is read through S3A, and values are never shown") {
    val opts = parse(
      "path" -> "s3://bucket/store",
      "s3.accessKey" -> "AKIAJVMTEST",
      "s3.secretKey" -> Secret,
      "s3.sessionToken" -> "token-value",
      "s3.region" -> "eu-west-1",
      "s3.endpoint" -> "127.0.0.1:9000",
      "s3.scheme" -> "http"
    )
    assert(RmqStores.hadoopSettings(opts) == Map(
      "fs.s3a.access.key" -> "AKIAJVMTEST",
      "fs.s3a.secret.key" -> Secret,
      "fs.s3a.session.token" -> "token-value",
      "fs.s3a.endpoint.region" -> "eu-west-1",
      "fs.s3a.endpoint" -> "127.0.0.1:9000",
      "fs.s3a.path.style.access" -> "true",
      "fs.s3a.connection.ssl.enabled" -> "false",
      "fs.s3a.aws.credentials.provider" -> "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
      "fs.s3.impl" -> RmqStores.S3AFileSystemClass
    ))
    val scan = new RmqScan(RmqSchema.Table, opts, IndexedSeq.empty, Array.empty)
    for (shown <- Seq(opts.toString, scan.description(), scan.getMetaData().toString))
      assert(!shown.contains(Secret) && !shown.contains("token-value"), shown)
    assert(RmqStores.hadoopSettings(parse("path" -> "/local/store")).isEmpty)
  }

  test("what Spark adds to a table's options is skipped (tests/spark/test_options.py, same case)") {
    val table = Seq(
      "path" -> "file:/s%20a",
      "location" -> "file:/s%20a",
      "owner" -> "root",
      "provider" -> "rmqstore",
      "comment" -> "c",
      "external" -> "false",
      "is_managed_location" -> "false",
      "table_type" -> "EXTERNAL",
      "collation" -> "UTF8_BINARY",
      "mode" -> "permissive",
      "option.mode" -> "permissive"
    )
    val opts = parse(table: _*)
    assert((opts.paths, opts.brokerNames, opts.mode) == (IndexedSeq("/s a"), IndexedSeq("/s a"), "PERMISSIVE"))
    for (name <- Seq("option.verifycrc", "a")) { // a copy of an option not given, a user's table property
      val e = intercept[IllegalArgumentException](parse(table :+ (name -> "x"): _*))
      assert(e.getMessage.contains(s"'$name': unknown option"), e.getMessage)
    }
  }

  test("local paths are made absolute with ~ expanded, URIs and broker names stay as typed") {
    val home = System.getProperty("user.home")
    val cwd = java.nio.file.Paths.get("").toAbsolutePath.toString
    val opts = parse("paths" -> """["~/stores/a", "rel/b/", "hdfs://nn/store"]""")
    assert(opts.paths == IndexedSeq(s"$home/stores/a", s"$cwd/rel/b", "hdfs://nn/store"))
    assert(opts.brokerNames == IndexedSeq("~/stores/a", "rel/b", "hdfs://nn/store"))
  }

  test("maxMessageSize is a byte size defaulting to 64 MiB, verifyCrc defaults to true") {
    assert(parse("path" -> "/s").maxMessageSize == 64 * 1024 * 1024)
    assert(parse("path" -> "/s", "MAXMESSAGESIZE" -> "128m").maxMessageSize == 128 * 1024 * 1024)
    assert(parse("path" -> "/s").verifyCrc)
  }
}
