package io.rmqstore.spark.store

import java.io.{BufferedReader, InputStreamReader}
import java.net.URI
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileSystem
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.rmqstore.spark.{RmqOptions, RmqStores}

/** A store read through Hadoop's S3A (org.apache.hadoop:hadoop-aws, a test dependency) from a moto S3 server
  * on loopback (the one the Python tests use, tests/conftest.py `s3_server`): the same answers as the local
  * store, and index probes that download a few pages, counted by S3A's own statistics.
  */
class S3StoreSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val name = "rmq-5.5.0"
  private val (slots, entries) = (50000, 200000) // 4.2 MB per index file
  private val Location = "s3://rmqstore/store" // read through S3A, as a user's s3:// path is
  private var server: Process = _
  private var endpoint: String = _

  /** Starts moto, creates bucket `rmqstore`, uploads the store under `store/`, prints host:port, waits for EOF. */
  private val MotoScript =
    """import os, sys
      |import boto3
      |from moto.server import ThreadedMotoServer
      |server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
      |server.start()
      |endpoint = "%s:%d" % server.get_host_and_port()
      |s3 = boto3.client("s3", endpoint_url="http://" + endpoint, aws_access_key_id="testing",
      |                  aws_secret_access_key="testing", region_name="us-east-1")
      |s3.create_bucket(Bucket="rmqstore")
      |root = sys.argv[1]
      |for directory, _, files in os.walk(root):
      |    for f in files:
      |        path = os.path.join(directory, f)
      |        with open(path, "rb") as fh:
      |            s3.put_object(Bucket="rmqstore", Key="store/" + os.path.relpath(path, root), Body=fh.read())
      |print(endpoint, flush=True)
      |sys.stdin.read()
      |server.stop()
      |""".stripMargin

  override def beforeAll(): Unit = {
    val root = Oracle.copyRelayingIndex(name, Files.createTempDirectory("rmq-s3"), slots, entries)
    val python = sys.env.getOrElse("PYTHON", "python3")
    server = new ProcessBuilder(python, "-c", MotoScript, root.toString).redirectError(ProcessBuilder.Redirect.DISCARD)
      .start()
    endpoint = new BufferedReader(new InputStreamReader(server.getInputStream, UTF_8)).readLine()
    assert(endpoint != null && endpoint.contains(":"), s"the moto server did not start ($python -c ...)")
  }

  override def afterAll(): Unit = if (server != null) {
    server.getOutputStream.close()
    server.waitFor()
  }

  /** The read's Hadoop configuration as the s3.* options make it (`RmqStores.hadoopSettings`). */
  private def conf: Configuration = {
    val options = RmqOptions.parse(
      Map(
        "path" -> Location,
        "s3.endpoint" -> endpoint,
        "s3.scheme" -> "http",
        "s3.region" -> "us-east-1",
        "s3.accessKey" -> "testing",
        "s3.secretKey" -> "testing"
      ).asJava
    )
    val c = new Configuration()
    RmqStores.hadoopSettings(options).foreach { case (k, v) => c.set(k, v) }
    c
  }

  test("S3A is on the test classpath") {
    assert(Class.forName(RmqStores.S3AFileSystemClass) != null)
  }

  private def open(): Store = Store.open(StoreLocation(Location), conf, Some((slots, entries)))

  /** S3A's counters (the file system the stores share; a stream's are added when it is closed). */
  private def counter(name: String): Long =
    FileSystem.get(URI.create(Location), conf).getStorageStatistics.getLong(name)

  test(s"$name on S3 through S3A: the same records and index answers as the local store") {
    val remote = open()
    val local = Oracle.open(name)
    try {
      def records(store: Store) = {
        val out = mutable.ArrayBuffer.empty[(Long, String)]
        store.scan(Long.MinValue, Long.MaxValue, verifyCrc = true, permissive = false)(v =>
          out += ((v.physicalOffset, v.msgId))
        )
        out.toSeq
      }
      assert(records(remote).nonEmpty && records(remote) == records(local))
      assert(remote.indexFiles.length == 7 && remote.indexFiles.forall(_.problem.isEmpty))
      for (key <- Seq("order-1", "k1", "absent"))
        assert(remote.indexCandidates("TopicTest", key).toSeq == local.indexCandidates("TopicTest", key).toSeq)
      assert(remote.indexCandidates("TopicTest", "order-1").nonEmpty)
    } finally {
      remote.close()
      local.close()
    }
  }

  test("an index probe on S3 downloads the header, the geometry samples, its slot and its chain entries") {
    val (bytes, gets) = (counter("stream_read_bytes"), counter("action_http_get_request"))
    val remote = open()
    val size =
      try {
        assert(remote.indexCandidates("TopicTest", "order-1").nonEmpty)
        remote.indexFiles.map(_.size).sum
      } finally remote.close()
    val (read, requests) = (counter("stream_read_bytes") - bytes, counter("action_http_get_request") - gets)
    info(f"opening 7 index files and one probe: $read%,d bytes in $requests GET requests (the files hold $size%,d)")
    assert(read > 0 && read <= 7 * (400L << 10))
  }
}
