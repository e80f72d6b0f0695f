package io.sqlext.expressions

import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.scalatest.funsuite.AnyFunSuite

class SplitRanksSuite extends AnyFunSuite {
  private def split(path: String, start: Long, time: Long): PartitionedFile =
    PartitionedFile(InternalRow.empty, SparkPath.fromUrlString(path), start, 100L,
      Array.empty[String], time, 1000L)

  // As Spark packs them: largest file first, a file's splits in different tasks.
  private val ranks = SplitRanks.of(Seq(
    split("file:/t/big", 100L, 20L), split("file:/t/late", 0L, 30L),
    split("file:/t/big", 0L, 20L), split("file:/t/b-same-ms", 0L, 10L),
    split("file:/t/a-same-ms", 0L, 10L)))

  test("files rank by modification time, then path") {
    assert(Seq("file:/t/a-same-ms", "file:/t/b-same-ms", "file:/t/big", "file:/t/late")
      .map(ranks.file) == Seq(0L, 1L, 2L, 3L))
  }

  test("splits rank by file, then offset, numbered on across files") {
    assert(ranks.split("file:/t/a-same-ms", 0L) == 0L)
    assert(ranks.split("file:/t/b-same-ms", 0L) == 1L)
    assert(ranks.split("file:/t/big", 0L) == 2L)
    assert(ranks.split("file:/t/big", 100L) == 3L)
    assert(ranks.split("file:/t/late", 0L) == 4L)
  }

  test("a file or split the plan did not hold is an error, never a guess") {
    val unknown = intercept[IllegalStateException](ranks.split("file:/t/other", 0L))
    assert(unknown.getMessage.contains("not among the files"))
    assert(intercept[IllegalStateException](ranks.split("file:/t/big", 50L))
      .getMessage.contains("no split"))
    assert(intercept[IllegalStateException](SplitRanks.Unplanned.file("file:/t/big"))
      .getMessage.contains("not ranked"))
  }
}
