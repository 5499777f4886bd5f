// Root sbt build. JVM pieces live in subprojects so each can pin its own RocketMQ version:
//  - conformanceCommon: version-independent helpers of the conformance generators (JSON writer, files).
//  - conformanceRmq49 / conformanceRmq5: fixture generators linked against real RocketMQ 4.9.8 / 5.5.0
//    (separate projects because classes moved between the lines, e.g. MessageExtBrokerInner);
//    conformanceRmq497 / conformanceRmq514 / conformanceRmq531: the same driver sources compiled against
//    RocketMQ 4.9.7 / 5.1.4 / 5.3.1
//    (the release matrix; a driver names its fixtures after the RocketMQ it is linked against).
//  - conformanceBroker5: the end-to-end fixture written by an in-process name server + broker + producer
//    (5.x), with mqadmin's answers through rocketmq-tools; reuses conformanceRmq5's oracle code.
//  - conformanceRocksdb: the main scenario written by RocketMQ 5.3.3's RocksDBMessageStore (storeType=defaultRocksDB:
//    RocksDB consume queues and consumer offsets), the rocketmq-5 driver with a RocksDB store.
//  - conformanceRdb: the LMQ shape fixture with its consumer offsets in RocketMQ 5.3.3's v2 config storage
//    (configManagerVersion=v2: the RocksDB config/rdb/ written by ConsumerOffsetManagerV2), the shapes-5.4 sources.
//  - conformanceDledger: the DLedger fixture, the 5.x scenario stored by DLedgerCommitLog (5.4.0).
//  - connector: the JVM DataSource V2 connector (Scala); Spark and its bundled codecs are Provided,
//    so the jar is thin (spec/spark-dsv2-connector-facts.md section 1). Published for spark-submit
//    --packages by .ci/sbt connector/publishLocal connector/publishM2 (README "For JVM users").
//  - examples: the Scala examples in examples/scala, compiled against the connector so they cannot rot;
//    not published.
// Bootstrap on a fresh machine (Maven Central only): .ci/sbt <command>.

ThisBuild / organization := "io.rmqstore"
ThisBuild / version := "0.1.0-SNAPSHOT"
ThisBuild / scalaVersion := "2.13.16"

val rocketmq49Version = "4.9.8"
val rocketmq5Version = "5.5.0" // newest 5.x whose modules (client, namesrv, ...) are all on Maven Central
// The Spark the 4.0 connector and the examples are compiled and tested against (spec/spark-dsv2-connector-facts.md
// section 1): -Drmqstore.spark=<v> (in SBT_JAVA_OPTS) or RMQSTORE_SPARK=<v>. Default 4.0.1, the oldest
// supported Spark 4 line, which the published 4.0 jar is built against; 4.1.1 and 4.2.0 also come from
// Maven Central. "pyspark" takes the installed pyspark's own jars/ (Spark 4.3.0, not on Maven Central)
// as unmanaged jars, found with `$PYTHON -c 'import pyspark'` (default python3).
val sparkChoice = sys.props.get("rmqstore.spark").orElse(sys.env.get("RMQSTORE_SPARK")).getOrElse("4.0.1")
val scala212 = "2.12.20"
val scala213 = "2.13.16"
val spark35Version = "3.5.9" // the newest 3.5 patch on Maven Central; its Hadoop is 3.3.4

def pysparkJars: Seq[File] = {
  import scala.sys.process._
  val python = sys.env.getOrElse("PYTHON", "python3")
  val home = Seq(python, "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))").!!.trim
  val jars = (file(home) / "jars" * "*.jar").get
  if (jars.isEmpty) sys.error(s"rmqstore.spark=pyspark: no jars under $home/jars")
  jars
}

// Spark on the compile and test classpaths, never in the jar or the published pom's runtime scope.
def sparkProvided(spark: String): Seq[Setting[_]] =
  if (spark == "pyspark") Seq(Compile / unmanagedJars ++= pysparkJars.map(Attributed.blank))
  else Seq(libraryDependencies += "org.apache.spark" %% "spark-sql" % spark % Provided)

// The 4.0 line's Spark as chosen above; any other choice than the default builds under its own target/, which
// keeps the default build's classes and jar (the ones the Python tests load) untouched.
lazy val chosenSpark: Seq[Setting[_]] = sparkProvided(sparkChoice) ++
  (if (sparkChoice == "4.0.1") Nil else Seq(target := baseDirectory.value / "target" / s"spark-$sparkChoice"))
// Older releases of the matrix (rocketmq-store/-broker/-client on Maven Central; 4.9.6's store is not).
val rocketmq49MatrixVersion = "4.9.7"
val rocketmq51MatrixVersion = "5.1.4" // magic v2 records, no enabledAppendPropCRC yet (5.2.0)
val rocketmq5MatrixVersion = "5.3.1" // before 5.3.3: batch properties still appended to inner records
val rocketmqRocksdbVersion = "5.3.3" // RocksDB consume queue with the offset column family (docs/format.md §4.7)
val rocketmqConfigV2Version = "5.3.3" // configManagerVersion=v2 (ConfigStorage, config/rdb), 5.3.2+
val rocketmqDledgerVersion = "5.4.0" // DLedgerCommitLog (DLedger 0.3.2) for the DLedger fixture
val rocketmqShapesVersion = "5.4.0" // the shape fixtures (BatchCQ, LMQ, cqext): a 5.x release not in the matrix

lazy val javaOnly = Seq(
  crossPaths := false,
  autoScalaLibrary := false,
  javacOptions ++= Seq("--release", "17", "-encoding", "UTF-8", "-Xlint:unchecked"),
  Compile / doc / sources := Seq.empty,
  publish / skip := true
)

lazy val scalaOptions =
  scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-unchecked", "-Xlint:-unused,_")

// Generators run in a forked JVM from the repository root, with a fixed time zone and headless
// logging so their output does not depend on the machine.
lazy val generatorRun = Seq(
  Compile / run / fork := true,
  Compile / run / baseDirectory := (LocalRootProject / baseDirectory).value,
  Compile / run / connectInput := false,
  Compile / run / javaOptions ++= Seq(
    "-Xmx1g",
    "-XX:MaxDirectMemorySize=512m",
    "-Duser.timezone=UTC",
    "-Drocketmq.client.logUseSlf4j=true",
    "-Drocketmq.log.level=WARN",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED"
  )
)

// Generator code shared by both RocketMQ lines, compiled once against each version.
lazy val sharedGeneratorSources = Seq(
  Compile / unmanagedSourceDirectories +=
    (LocalRootProject / baseDirectory).value / "tests/conformance/generator/shared/src/main/java"
)

// A driver's sources (generator/rocketmq-4.9 or rocketmq-5) for a project of another RocketMQ release.
def driverSources(line: String) = Seq(
  Compile / unmanagedSourceDirectories +=
    (LocalRootProject / baseDirectory).value / s"tests/conformance/generator/$line/src/main/java"
)

def rocketmq49Store(version: String) = Seq(
  libraryDependencies ++= Seq(
    "org.apache.rocketmq" % "rocketmq-store" % version,
    "org.apache.rocketmq" % "rocketmq-common" % version,
    "org.apache.rocketmq" % "rocketmq-remoting" % version
  )
)

// The 5.x driver needs the store and the broker's ConsumerOffsetManager (5.3.1 has no rocketmq-namesrv on Central).
def rocketmq5Store(version: String) = Seq(
  libraryDependencies ++= Seq(
    "org.apache.rocketmq" % "rocketmq-store" % version,
    "org.apache.rocketmq" % "rocketmq-broker" % version
  )
)

lazy val root = (project in file("."))
  .aggregate(connector, connector35_212, connector35_213, examples, conformanceCommon, conformanceRmq49, conformanceRmq5, conformanceBroker5,
    conformanceRmq497, conformanceRmq514, conformanceRmq531, conformanceRocksdb, conformanceDledger,
    conformanceShapes540, conformanceRdb)
  .settings(publish / skip := true)

// S3A for the connector's S3 test (S3StoreSuite, against a moto server on loopback): hadoop-aws of the Hadoop
// that the chosen Spark ships, with the AWS SDK v2 modules S3A loads instead of the SDK's ~500 MB `bundle`
// (about 18 MB; their netty, commons-codec and slf4j are Spark's own). One SDK release for every Hadoop: Hadoop
// 3.4.1's (2.24.6) has no s3-transfer-manager on Maven Central. 3.4.2 and later also load the analytics
// accelerator (versions from hadoop-project's pom). Hadoop 3.3 (Spark 3.5) has S3A on the AWS SDK v1: its s3
// and dynamodb modules (S3A 3.3 still links S3Guard's exceptions; Hadoop 3.3.4's release) instead of its bundle.
val hadoopOfSpark = Map(spark35Version -> "3.3.4", "4.0.1" -> "3.4.1", "4.1.1" -> "3.4.2", "4.2.0" -> "3.5.0")
val awsSdkForTests = "2.35.4"
val awsSdkV1OfHadoop = Map("3.3.4" -> "1.12.262")
val analyticsAcceleratorOfHadoop = Map("3.4.2" -> "1.2.1", "3.5.0" -> "1.3.1")

def s3aForTests(spark: String): Seq[Setting[_]] = Seq(libraryDependencies ++= {
  val hadoop =
    if (spark != "pyspark") hadoopOfSpark.getOrElse(spark, sys.error(s"no Hadoop version known for Spark $spark"))
    else pysparkJars.map(_.getName).collectFirst { case n if n.startsWith("hadoop-client-api-") =>
      n.stripPrefix("hadoop-client-api-").stripSuffix(".jar")
    }.getOrElse(sys.error("pyspark's jars/ has no hadoop-client-api"))
  val sparkHas = Seq("io.netty", "commons-codec", "commons-logging", "org.slf4j")
  val sdk = awsSdkV1OfHadoop.get(hadoop).fold(
    Seq("s3", "sts", "s3-transfer-manager").map(a => "software.amazon.awssdk" % a % awsSdkForTests)
  )(v1 => Seq("aws-java-sdk-s3", "aws-java-sdk-dynamodb").map(a => "com.amazonaws" % a % v1))
  val accelerator = analyticsAcceleratorOfHadoop.get(hadoop).toSeq
    .map(v => "software.amazon.s3.analyticsaccelerator" % "analyticsaccelerator-s3" % v)
  ("org.apache.hadoop" % "hadoop-aws" % hadoop % Test intransitive ()) +:
    (sdk ++ accelerator).map(m => (m % Test).excludeAll(sparkHas.map(ExclusionRule(_)): _*))
})

// The published pom's project information, as Maven Central requires it (license, url, scm, developers),
// and the license files in the jar's META-INF.
val projectUrl = "https://github.com/rmqstore/rmqstore"
lazy val publishedPom: Seq[Setting[_]] = Seq(
  description := "Apache Spark DataSource V2 connector that reads Apache RocketMQ broker stores",
  licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
  homepage := Some(url(projectUrl)),
  scmInfo := Some(ScmInfo(url(projectUrl), s"scm:git:$projectUrl.git")),
  developers := List(Developer("rmqstore", "The rmqstore authors", "", url(projectUrl))),
  Compile / packageBin / mappings ++= Seq("LICENSE", "NOTICE")
    .map(name => (LocalRootProject / baseDirectory).value / name -> s"META-INF/$name")
)

// What spark-submit's launcher adds on Java 17 (JavaModuleOptions) for a local SparkSession in a forked test JVM:
// Spark 3.5's StorageUtils fails without sun.nio.ch (the Spark 4 suites start without them).
val sparkModuleOptions = Seq("java.lang", "java.lang.invoke", "java.io", "java.net", "java.nio", "java.util",
  "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch", "sun.nio.cs", "sun.security.action",
  "sun.util.calendar").map(p => s"--add-opens=java.base/$p=ALL-UNNAMED")

// The connector, one artifact per Spark line and Scala version, named as Spark's own modules are
// (rmqstore-spark-<line>_<scala>), all built from connector/src: the line's API shims live in
// connector/src/main/spark-<shims>/ (README "For JVM users"). `connector` is the 4.0 line (serving Spark 4.0 to 4.3),
// the jar the Python engine's tests load; the 3.5 ones build under target/spark-3.5_<scala>/.
def connectorLine(id: String, line: String, scala: String, spark: Seq[Setting[_]], shims: String): Project =
  Project(id, file("connector"))
    .settings(
      name := s"rmqstore-spark-$line",
      moduleName := name.value, // not sbt's normalized "rmqstore-spark-3-5"
      publishedPom,
      scalaVersion := scala,
      scalaOptions,
      spark,
      Compile / unmanagedSourceDirectories += (Compile / sourceDirectory).value / s"spark-$shims",
      Test / unmanagedSourceDirectories += (Test / sourceDirectory).value / s"spark-$shims",
      libraryDependencies += "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      // Tests read the conformance fixtures by paths relative to the repository root.
      Test / fork := true,
      Test / baseDirectory := (LocalRootProject / baseDirectory).value,
      Test / javaOptions ++= Seq("-Xmx1g", "-Duser.timezone=UTC") ++ sparkModuleOptions,
      // rmqstore's own caches (side index) of the test stores go under target/, not ~/.cache/rmqstore
      Test / envVars += "RMQSTORE_CACHE_DIR" -> (target.value / "rmqstore-test-cache").toString
    )

lazy val connector = connectorLine("connector", "4.0", scala213, chosenSpark ++ s3aForTests(sparkChoice), "4")

def connector35(id: String, scala: String): Project = connectorLine(id, "3.5", scala,
  sparkProvided(spark35Version) ++ s3aForTests(spark35Version) ++
    Seq(target := baseDirectory.value / "target" / s"spark-3.5_${scala.split('.').take(2).mkString(".")}"), "3.5")
lazy val connector35_212 = connector35("connector35_212", scala212)
lazy val connector35_213 = connector35("connector35_213", scala213)

lazy val examples = (project in file("examples"))
  .dependsOn(connector)
  .settings(
    name := "rmqstore-examples",
    scalaOptions,
    chosenSpark,
    Compile / scalaSource := baseDirectory.value / "scala",
    publish / skip := true
  )

lazy val conformanceCommon = (project in file("tests/conformance/generator/common"))
  .settings(javaOnly)

lazy val conformanceRmq49 = (project in file("tests/conformance/generator/rocketmq-4.9"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, rocketmq49Store(rocketmq49Version))

lazy val conformanceRmq497 = (project in file("tests/conformance/generator/releases/4.9.7"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, driverSources("rocketmq-4.9"),
    rocketmq49Store(rocketmq49MatrixVersion))

lazy val conformanceRmq5 = (project in file("tests/conformance/generator/rocketmq-5"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, rocketmq5Store(rocketmq5Version))
  .settings( // for the broker fixture built on this project
    libraryDependencies ++= Seq(
      "org.apache.rocketmq" % "rocketmq-namesrv" % rocketmq5Version,
      "org.apache.rocketmq" % "rocketmq-client" % rocketmq5Version
    )
  )

lazy val conformanceRmq514 = (project in file("tests/conformance/generator/releases/5.1.4"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, driverSources("rocketmq-5"),
    rocketmq5Store(rocketmq51MatrixVersion))

lazy val conformanceRmq531 = (project in file("tests/conformance/generator/releases/5.3.1"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, driverSources("rocketmq-5"),
    rocketmq5Store(rocketmq5MatrixVersion))

lazy val conformanceRocksdb = (project in file("tests/conformance/generator/rocksdb-5"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, driverSources("rocketmq-5"),
    rocketmq5Store(rocketmqRocksdbVersion))
  .settings(Compile / run / mainClass := Some("io.rmqstore.conformance.rocksdb.RocksDriver"))
// The non-default store shapes (BatchCQ topics, LMQ multi-dispatch, ConsumeQueueExt), written by 5.4.0's store;
// reuses the 5.x driver (generator/rocketmq-5) for RocketMQ's query answers.
lazy val conformanceShapes540 = (project in file("tests/conformance/generator/shapes-5.4"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, driverSources("rocketmq-5"),
    rocketmq5Store(rocketmqShapesVersion))
  .settings(Compile / run / mainClass := Some("io.rmqstore.conformance.shapes.ShapesFixtures"))
// The v2 config storage fixture (rmq-5.3.3-rdb): the shapes-5.4 LMQ store, consumer offsets in config/rdb/.
lazy val conformanceRdb = (project in file("tests/conformance/generator/rdb-5"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, driverSources("rocketmq-5"), driverSources("shapes-5.4"),
    rocketmq5Store(rocketmqConfigV2Version))
  .settings(Compile / run / mainClass := Some("io.rmqstore.conformance.rdb.RdbFixture"))

lazy val conformanceBroker5 = (project in file("tests/conformance/generator/broker-5"))
  .dependsOn(conformanceRmq5)
  .settings(javaOnly, generatorRun)
  .settings(
    libraryDependencies += "org.apache.rocketmq" % "rocketmq-tools" % rocketmq5Version,
    Compile / run / mainClass := Some("io.rmqstore.conformance.broker5.BrokerFixture")
  )

// The DLedger fixture (rmq-5.4.0-dledger): the 5.x driver's scenario stored by DLedgerCommitLog.
lazy val conformanceDledger = (project in file("tests/conformance/generator/dledger-5"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources, driverSources("rocketmq-5"),
    rocketmq5Store(rocketmqDledgerVersion))
  .settings(Compile / run / mainClass := Some("io.rmqstore.conformance.DledgerFixture"))
