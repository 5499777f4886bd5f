// Root sbt build. JVM pieces live in subprojects so each can pin its own RocketMQ version:
//  - conformanceCommon: version-independent helpers of the conformance generators (JSON writer, files).
//  - conformanceRmq49 / conformanceRmq5: fixture generators linked against real RocketMQ 4.9.8 / 5.x
//    (separate projects because classes moved between the lines, e.g. MessageExtBrokerInner).
//  - conformanceBroker5: the end-to-end fixture written by an in-process name server + broker + producer
//    (5.x), with mqadmin's answers through rocketmq-tools; reuses conformanceRmq5's oracle code.
//  - connector: the JVM DataSource V2 connector (Scala); Spark and its bundled codecs are Provided,
//    so the jar is thin (spec/spark-dsv2-connector-facts.md section 1).
// Bootstrap on a fresh machine (Maven Central only): .ci/sbt <command>.

ThisBuild / organization := "io.rmqstore"
ThisBuild / version := "0.1.0-SNAPSHOT"
ThisBuild / scalaVersion := "2.13.16"

val rocketmq49Version = "4.9.8"
val rocketmq5Version = "5.5.0" // newest 5.x whose modules (client, namesrv, ...) are all on Maven Central
val sparkVersion = sys.props.getOrElse("spark.version", "4.0.1") // oldest supported Spark 4 line

lazy val javaOnly = Seq(
  crossPaths := false,
  autoScalaLibrary := false,
  javacOptions ++= Seq("--release", "17", "-encoding", "UTF-8", "-Xlint:unchecked"),
  Compile / doc / sources := Seq.empty,
  publish / skip := true
)

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

lazy val root = (project in file("."))
  .aggregate(connector, conformanceCommon, conformanceRmq49, conformanceRmq5, conformanceBroker5)
  .settings(publish / skip := true)

lazy val connector = (project in file("connector"))
  .settings(
    name := "rmqstore-connector",
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-unchecked", "-Xlint:-unused,_"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    // Tests read the conformance fixtures by paths relative to the repository root.
    Test / fork := true,
    Test / baseDirectory := (LocalRootProject / baseDirectory).value,
    Test / javaOptions ++= Seq("-Xmx1g", "-Duser.timezone=UTC")
  )

lazy val conformanceCommon = (project in file("tests/conformance/generator/common"))
  .settings(javaOnly)

lazy val conformanceRmq49 = (project in file("tests/conformance/generator/rocketmq-4.9"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources)
  .settings(
    libraryDependencies ++= Seq(
      "org.apache.rocketmq" % "rocketmq-store" % rocketmq49Version,
      "org.apache.rocketmq" % "rocketmq-common" % rocketmq49Version,
      "org.apache.rocketmq" % "rocketmq-remoting" % rocketmq49Version
    )
  )

lazy val conformanceRmq5 = (project in file("tests/conformance/generator/rocketmq-5"))
  .dependsOn(conformanceCommon)
  .settings(javaOnly, generatorRun, sharedGeneratorSources)
  .settings(
    libraryDependencies ++= Seq(
      "org.apache.rocketmq" % "rocketmq-store" % rocketmq5Version,
      "org.apache.rocketmq" % "rocketmq-broker" % rocketmq5Version,
      "org.apache.rocketmq" % "rocketmq-namesrv" % rocketmq5Version,
      "org.apache.rocketmq" % "rocketmq-client" % rocketmq5Version
    )
  )

lazy val conformanceBroker5 = (project in file("tests/conformance/generator/broker-5"))
  .dependsOn(conformanceRmq5)
  .settings(javaOnly, generatorRun)
  .settings(
    libraryDependencies += "org.apache.rocketmq" % "rocketmq-tools" % rocketmq5Version,
    Compile / run / mainClass := Some("io.rmqstore.conformance.broker5.BrokerFixture")
  )
