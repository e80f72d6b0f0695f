package io.sqlext.window

import org.scalatest.funsuite.AnyFunSuite

class WindowSpecSuite extends AnyFunSuite {
  test("reads the rewriter's JSON, with defaults for absent fields") {
    val spec = WindowSpec.fromJson(
      """{"kind":"tumbling","policy":"count","count":4,"policy_text":"COUNT(4)",
        |"partition_columns":["__sx_p0"],"ordered":true,"meta":["window_id"]}""".stripMargin)
    assert(spec.count == 4 && spec.policy == "count" && spec.partitionColumns == Seq("__sx_p0"))
    assert(spec.delta == 0.0 && spec.ordered && spec.meta == Seq("window_id"))
  }
}
