package io.sqlext.window

import org.scalatest.funsuite.AnyFunSuite

class WindowSpecSuite extends AnyFunSuite {
  private def spec(fields: String): WindowSpec = WindowSpec.fromJson(
    s"""{"policy_text":"P","partition_columns":[],"ordered":false,"meta":[],$fields}""")

  test("reads the rewriter's JSON, with defaults for absent fields") {
    val spec = WindowSpec.fromJson(
      """{"kind":"tumbling","policy":"count","count":4,"policy_text":"COUNT(4)",
        |"partition_columns":["__sx_p0"],"ordered":true,"meta":["window_id"]}""".stripMargin)
    assert(spec.count == 4 && spec.policy == "count" && spec.partitionColumns == Seq("__sx_p0"))
    assert(spec.delta == 0.0 && spec.ordered && spec.meta == Seq("window_id"))
  }

  test("every family parses into typed values once") {
    assert(spec(""""kind":"tumbling","policy":"punct_expr"""").family ==
      Family.Tumbling(Policy.MarkerPunct))
    val sliding = spec(""""kind":"sliding","policy":"time","seconds":2.5,"trigger":"delta",
      |"trigger_delta":3""".stripMargin)
    assert(sliding.family == Family.Sliding(Policy.Time(2.5), Policy.Delta(3)))
    assert(sliding.tickPeriod == 2500000L && sliding.timeBased && sliding.usesClock)
    assert(spec(""""kind":"time_interval","duration":1,"period":1,"watermark":"delay",
      |"watermark_delay":4""".stripMargin).family ==
      Family.TimeInterval(Watermark.Delay(4)))
    val evicting = spec(""""kind":"tumbling","policy":"count","count":2,
      |"partition_eviction":"age","partition_eviction_value":1.5""".stripMargin)
    assert(evicting.partitionEvictionPolicy.contains(PartitionEvictionPolicy.Age(1)))
    assert(evicting.usesClock && !evicting.actsAcrossPartitions && evicting.replaysGlobally)
  }

  test("an unknown name fails when the spec is read, naming the field") {
    Seq(""""kind":"hopping"""" -> "kind 'hopping'",
      """"kind":"tumbling","policy":"rows"""" -> "policy 'rows'",
      """"kind":"sliding","policy":"count","count":2,"trigger":"punct_expr"""" -> null,
      """"kind":"sliding","policy":"count","count":2,"trigger":"often"""" -> "trigger 'often'",
      """"kind":"time_interval","duration":1,"period":1,"watermark":"late"""" ->
        "watermark 'late'",
      """"kind":"tumbling","policy":"count","partition_eviction":"lru"""" ->
        "partition_eviction 'lru'").foreach { case (fields, message) =>
      if (message == null) spec(fields) // parses; SLIDING's construction refuses PUNCT
      else {
        val e = intercept[IllegalArgumentException](spec(fields))
        assert(e.getMessage.contains(s"unknown $message"), e.getMessage)
      }
    }
  }
}
