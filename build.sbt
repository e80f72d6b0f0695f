// One JVM module (jvm/), compiled against the exact Spark jars that the pinned pyspark wheel
// ships, so the extension can never drift from the runtime it is loaded into. The jar lands in
// sql_ext/jars/ where the Python package finds it.
import java.nio.file.{Files, Paths}

ThisBuild / scalaVersion := "2.13.18"
ThisBuild / organization := "io.sqlext"
ThisBuild / version := "0.1.0"

// Where pyspark's jars live: SQL_EXT_SPARK_JARS, else the project's .venv.
lazy val sparkJarsDir: File = {
  val fromEnv = sys.env.get("SQL_EXT_SPARK_JARS").map(file)
  def fromVenv = {
    // Absolute: the forked test JVM runs in jvm/, where a relative class path finds nothing.
    val lib = file(".venv").getAbsoluteFile / "lib"
    Option(lib.listFiles).getOrElse(Array.empty[File]).toSeq
      .map(_ / "site-packages" / "pyspark" / "jars").find(_.isDirectory)
  }
  fromEnv.orElse(fromVenv).getOrElse(
    sys.error("pyspark jars not found: set SQL_EXT_SPARK_JARS or run `bash python/dev.sh setup`"))
}

lazy val jvm = (project in file("jvm"))
  .settings(
    name := "sql-ext",
    Compile / unmanagedJars ++= (sparkJarsDir ** "*.jar").classpath,
    // Delta's jars (the checked download of sql_ext.jars, `dev.sh setup` fetches them first):
    // the streaming sink commits through Delta's transaction API. Not packaged.
    Compile / unmanagedJars ++=
      (sys.env.get("SQL_EXT_JAR_CACHE").map(file).getOrElse(file(".cache") / "jars") ** "*.jar")
        .classpath,
    libraryDependencies += "org.scalatest" %% "scalatest" % "3.2.19" % Test,
    scalacOptions ++= Seq("-deprecation", "-feature", "-release", "17"),
    Test / fork := true,
    // The suites' Spark sessions live seconds: the C1 compiler alone warms them up with less
    // CPU than C2 takes to compile for a long run (jvm/test: 66 -> 51 CPU-s, 33 s -> 29 s).
    Test / javaOptions ++= Seq("--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
      "-XX:TieredStopAtLevel=1"),
    // What the Python side and the JVM share, defined once in the Python package: the contract
    // (helper columns, SHOW STREAMS' columns; io.sqlext.Contract) and sql-ext's error
    // conditions (io.sqlext.SqlExtErrors), both read from the jar.
    Compile / resourceGenerators += Def.task {
      Seq("contract.json", "error-conditions.json").map { name =>
        val source = (LocalRootProject / baseDirectory).value / "sql_ext" / "sql" / name
        val target = (Compile / resourceManaged).value / "io" / "sqlext" / name
        IO.copyFile(source, target)
        target
      }
    }.taskValue,
    Compile / packageBin / artifactPath :=
      (LocalRootProject / baseDirectory).value / "sql_ext" / "jars" / "sql-ext.jar"
  )

lazy val root = (project in file(".")).aggregate(jvm).settings(publish / skip := true)
