// Formatting (scalafmt, configured by .scalafmt.conf at the repository root); resolves from Maven Central.
addSbtPlugin("org.scalameta" % "sbt-scalafmt" % "2.5.6")
