package io.sqlext.expressions

import java.nio.file.{Files, Path}

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.execution.WholeStageCodegenExec
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/** sql_ext_arrival() and sql_ext_arrival_file() give the same values in Spark's generated code
 *  (whole-stage codegen, the default) and interpreted (no codegen at all), each checked to have
 *  run in its mode. The Python suite's worker sessions run interpreted (their inputs are a few
 *  rows, where compiling costs more than it saves: docs/testing.md), so the generated path of
 *  each sql-ext expression with its own code is held here (CountedDecoded's by
 *  KafkaMessagesSuite) and by the servers and drivers the Python tests start. */
class CodegenModesSuite extends AnyFunSuite with BeforeAndAfterAll {
  private var spark: SparkSession = _
  private var folder: Path = _

  override def beforeAll(): Unit = {
    spark = SparkSession.builder().master("local[2]").appName("CodegenModesSuite")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.extensions", "io.sqlext.SqlExtExtensions")
      // Several splits per file and several files per task: ranks across both.
      .config("spark.sql.files.maxPartitionBytes", "64")
      .config("spark.sql.files.openCostInBytes", "0")
      .getOrCreate()
    folder = Files.createTempDirectory("codegen_modes")
    for (f <- 0 until 3) {
      val file = folder.resolve(s"part-$f.txt")
      Files.writeString(file, (0 until 20).map(i => s"f$f-line$i").mkString("", "\n", "\n"))
      file.toFile.setLastModified(1700000000000L + f * 1000L)
    }
  }

  override def afterAll(): Unit = spark.stop()

  private def arrival(codegen: Boolean): (Seq[Row], Boolean) = {
    val settings = if (codegen) Seq("spark.sql.codegen.wholeStage" -> "true",
      "spark.sql.codegen.factoryMode" -> "CODEGEN_ONLY")
    else Seq("spark.sql.codegen.wholeStage" -> "false",
      "spark.sql.codegen.factoryMode" -> "NO_CODEGEN")
    settings.foreach { case (k, v) => spark.conf.set(k, v) }
    try {
      val frame = spark.sql(s"SELECT value, sql_ext_arrival() AS a, sql_ext_arrival_file() AS f " +
        s"FROM text.`${folder.toUri}`")
      val generated = frame.queryExecution.executedPlan.collect {
        case w: WholeStageCodegenExec => w }.nonEmpty
      (frame.collect().toSeq.sortBy(_.getLong(1)), generated)
    } finally {
      Seq("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode").foreach(spark.conf.unset)
    }
  }

  test("arrival values are equal generated and interpreted, in the files' order") {
    val (generated, usedCodegen) = arrival(codegen = true)
    val (interpreted, usedCodegenToo) = arrival(codegen = false)
    assert(usedCodegen && !usedCodegenToo)
    assert(generated == interpreted)
    // The files' order (by modification time), each file's lines in order.
    assert(generated.map(_.getString(0)) ==
      (0 until 3).flatMap(f => (0 until 20).map(i => s"f$f-line$i")))
    assert(generated.map(_.getLong(2)) == (0 until 3).flatMap(f => Seq.fill(20)(f.toLong)))
    assert(generated.map(_.getLong(1)).distinct.length == 60)
  }
}
