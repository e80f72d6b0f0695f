package io.sqlext.optimizer

import io.sqlext.plans.logical.{WindowAggregate, WindowAssign}
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LocalRelation, LogicalPlan}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** The rule alone, over hand-built plans: where it hands the aggregation to the window
 *  operator, and every case where it must leave Spark's aggregation in place. */
class IncrementalWindowAggregateSuite extends AnyFunSuite {
  private val x = AttributeReference("x", DoubleType)()
  private val n = AttributeReference("n", LongType)()
  private val s = AttributeReference("s", StringType)()
  private val g = AttributeReference("g", LongType)()
  private val key = AttributeReference("__sx_p0", LongType)()
  private val order = AttributeReference(WindowSpec.OrderColumn, LongType)()
  private val seq = AttributeReference(WindowSpec.SeqColumn, LongType)()
  private val input = LocalRelation(Seq(x, n, s, g, key, order, seq))

  private def window(kind: String): WindowAssign = WindowAssign.create(WindowSpec.fromJson(
    s"""{"kind":"$kind","policy":"count","count":10,"policy_text":"COUNT(10)",
       |"partition_columns":["__sx_p0"],"ordered":true,"meta":[],
       |"trigger":"${if (kind == "sliding") "count" else ""}","trigger_count":1}"""
      .stripMargin), input)

  private def aggregate(function: AggregateFunction, distinct: Boolean = false,
      groups: Seq[Expression] = Nil, kind: String = "sliding"): LogicalPlan = {
    val w = window(kind)
    val fire = w.metaOutput.head
    val value = Alias(AggregateExpression(function, Complete, distinct, None), "v")()
    Aggregate(Seq(key, fire) ++ groups, Seq(key, value), w, None)
  }

  private def applies(plan: LogicalPlan): Boolean =
    IncrementalWindowAggregate(plan).collectFirst { case a: WindowAggregate => a }.isDefined

  test("SUM, AVG, MIN, MAX of numbers and COUNT take the incremental operator") {
    Seq(Sum(x), Average(x), Min(n), Max(Multiply(n, Literal(2L))), Count(Seq(s)))
      .foreach(f => assert(applies(aggregate(f)), f))
  }

  test("the operator's output replaces the aggregate, one row per firing") {
    val rewritten = IncrementalWindowAggregate(aggregate(Sum(x)))
    assert(rewritten.collect { case a: Aggregate => a }.isEmpty)
    assert(rewritten.output.map(_.name) == Seq("__sx_p0", "v"))
  }

  test("should not apply: holistic aggregates, DISTINCT, non-numeric inputs") {
    assert(!applies(aggregate(CollectList(x))))
    assert(!applies(aggregate(Sum(x), distinct = true)))
    assert(!applies(aggregate(Max(s))))
    assert(!applies(aggregate(Sum(Cast(n, DecimalType(10, 2))))))
  }

  test("should not apply: a GROUP BY of the query's own, or a TUMBLING window") {
    assert(!applies(aggregate(Sum(x), groups = Seq(g))))
    assert(!applies(aggregate(Sum(x), kind = "tumbling")))
  }
}
