package io.rmqstore.spark

import java.io.IOException

import org.apache.hadoop.conf.Configuration

import io.StoreFileSystem
import store.{Store, StoreLayoutException, StoreLocation}

/** Opening the stores a read names, with errors that start with the cause (python/rmqstore/spark/stores.py):
  * `rmqstore: no RocketMQ store at '<path>': <reason>` saying what a store holds, or
  * `rmqstore: cannot read the store at '<path>': <error>`.
  */
object RmqStores {
  val StoreLayoutHint = "a broker store directory holds commitlog/, and usually consumequeue/, index/ and config/"

  /** The Hadoop class that reads s3:// stores on the JVM (from org.apache.hadoop:hadoop-aws). */
  val S3AFileSystemClass = "org.apache.hadoop.fs.s3a.S3AFileSystem"

  /** The scan's Hadoop configuration: the session's, plus the s3.* settings and s3:// read through S3A. */
  def hadoopSettings(options: RmqOptions): Map[String, String] =
    if (!options.paths.exists(StoreFileSystem.isS3Uri)) Map.empty
    else options.s3.hadoop + ("fs.s3.impl" -> S3AFileSystemClass)

  /** `Store.open` of one of the read's paths with its options; StoreLayoutException naming the path. */
  def open(
      options: RmqOptions,
      path: String,
      conf: Configuration,
      knownEnd: Option[Long] = None,
      checkCrcAtEnd: Boolean = true
  ): Store = {
    if (StoreFileSystem.isS3Uri(path) && !hasS3A)
      throw new StoreLayoutException(
        s"rmqstore: cannot read the store at '$path': the JVM engine reads s3:// through Hadoop's S3A file " +
          "system, which is not on the classpath: add org.apache.hadoop:hadoop-aws (the version of Spark's " +
          "Hadoop) to spark.jars.packages"
      )
    try Store.open(StoreLocation(path), conf, options.indexGeometry, knownEnd, checkCrcAtEnd, options.maxMessageSize)
    catch {
      case e: StoreLayoutException =>
        val reason = e.getMessage.stripPrefix(s"$path: ")
        val hint = if (reason.contains("commitlog/")) "" else s" ($StoreLayoutHint)"
        throw new StoreLayoutException(s"rmqstore: no RocketMQ store at '$path': $reason$hint")
      case e: IOException => // permissions, remote access (never carries credentials)
        throw new StoreLayoutException(s"rmqstore: cannot read the store at '$path': ${e.getMessage}")
    }
  }

  /** Open and close every store of a read, so that a wrong path fails when the DataFrame is made. */
  def check(options: RmqOptions, conf: Configuration): Unit =
    options.paths.foreach(p => open(options, p, conf).close())

  /** The topics of every store of a read (`Store.topics`: consume queues and topics.json, no log read), sorted. */
  def topics(options: RmqOptions, conf: Configuration): Seq[String] =
    options.paths.flatMap { p =>
      val store = open(options, p, conf)
      try store.topics
      finally store.close()
    }.distinct.sorted

  private def hasS3A: Boolean =
    try { Class.forName(S3AFileSystemClass, false, getClass.getClassLoader); true }
    catch { case _: ClassNotFoundException => false }
}
