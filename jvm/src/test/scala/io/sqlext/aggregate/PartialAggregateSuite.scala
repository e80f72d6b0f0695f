package io.sqlext.aggregate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** The one partial arithmetic against Spark's rules for its built-in aggregates (the Python
 *  property tests compare whole windows with Spark itself). */
class PartialAggregateSuite extends AnyFunSuite {
  private val NaN = Double.NaN

  /** The aggregate over `values` (null: SQL NULL) in one pass, as a streaming firing does. */
  private def over(a: PartialAggregate, values: Any*): Any = {
    val layout = new AggregateLayout(Array(a))
    layout.over(values.map(v => InternalRow(v)).toIndexedSeq, Array(0)).head
  }

  /** The same, merging one partial per value, newest last (as two stacks and panes do). */
  private def merged(a: PartialAggregate, values: Any*): Any = {
    val layout = new AggregateLayout(Array(a))
    val parts = values.map { v =>
      val p = layout.empty
      if (v != null) layout.add(p, 0, a.readValue(v))
      p
    }
    layout.results(parts.foldLeft(layout.empty)(layout.merge)).head
  }

  private def both(a: PartialAggregate, values: Any*): Any = {
    val one = over(a, values: _*)
    val other = merged(a, values: _*)
    assert(one == other || (isNaN(one) && isNaN(other)), s"$a over $values: $one vs $other")
    one
  }

  private def isNaN(v: Any): Boolean = v match {
    case d: Double => d.isNaN
    case f: Float => f.isNaN
    case _ => false
  }

  test("MIN and MAX order NaN above every number, as Spark does") {
    assert(both(FloatingExtreme(DoubleType, min = true), 0.0, 1.0, NaN, 3.0) == 0.0)
    assert(isNaN(both(FloatingExtreme(DoubleType, min = false), 0.0, NaN, 3.0)))
    assert(isNaN(both(FloatingExtreme(DoubleType, min = true), NaN, NaN)))
    assert(both(FloatingExtreme(DoubleType, min = true), NaN, Double.PositiveInfinity) ==
      Double.PositiveInfinity)
    assert(both(FloatingExtreme(FloatType, min = true), Float.NaN, -1.5f) == -1.5f)
  }

  test("-0.0 equals 0.0 and a tie keeps the older value, as Spark's MIN and MAX") {
    val min = FloatingExtreme(DoubleType, min = true)
    assert(both(min, 0.0, -0.0).asInstanceOf[Double].equals(0.0))
    assert(both(min, -0.0, 0.0).asInstanceOf[Double].equals(-0.0))
  }

  test("results take Spark's types; no input is NULL, COUNT's 0") {
    assert(both(IntegralExtreme(ShortType, min = false), 3.toShort, 9.toShort) == 9.toShort)
    assert(both(FloatingExtreme(FloatType, min = false), 1.5f, 2.5f) == 2.5f)
    assert(both(IntegralSum(IntegerType, ansi = true), 1, 2, null) == 3L)
    assert(both(FloatingSum(FloatType), 1.5f, null) == 1.5)
    assert(both(IntegralAverage(IntegerType), 1, 2) == 1.5)
    assert(both(IntegralSum(LongType, ansi = true), null, null) == null)
    assert(both(FloatingAverage(DoubleType)) == null)
    assert(both(CountOf(all = false), null, 1.0, NaN) == 2L)
    assert(IntegralSum(IntegerType, ansi = false).resultType == LongType)
    assert(IntegralAverage(LongType).resultType == DoubleType)
  }

  test("SUM of integers raises ARITHMETIC_OVERFLOW under ANSI and wraps otherwise") {
    val error = intercept[ArithmeticException] { // Spark's SparkArithmeticException
      both(IntegralSum(LongType, ansi = true), Long.MaxValue, 1L)
    }
    assert(error.getMessage.contains("[ARITHMETIC_OVERFLOW]"))
    assert(both(IntegralSum(LongType, ansi = false), Long.MaxValue, 1L) == Long.MinValue)
  }

  test("SUM of integers checks only the sum itself: partial sums on the way may leave BIGINT") {
    // A window's running sum passes through tuples about to be evicted, or sub-ranges.
    val sum = IntegralSum(LongType, ansi = true)
    assert(both(sum, Long.MaxValue, Long.MaxValue, Long.MinValue, Long.MinValue, 7L) == 5L)
    val layout = new AggregateLayout(Array[PartialAggregate](sum))
    val p = layout.empty
    layout.add(p, 0, Long.MaxValue)
    layout.add(p, 0, 1L)
    // Its row form (a pane's sum so far) is one BIGINT: there an overflow is one.
    intercept[ArithmeticException](layout.partialValues(p))
    val wrapping = new AggregateLayout(Array[PartialAggregate](IntegralSum(LongType,
      ansi = false)))
    val q = wrapping.empty
    wrapping.add(q, 0, Long.MaxValue)
    wrapping.add(q, 0, 1L)
    val back = wrapping.partialsOf(wrapping.partialValues(q).toIndexedSeq, 0)
    wrapping.add(back, 0, -1L)
    assert(wrapping.results(back).head == Long.MaxValue) // wraps back, as Spark's Sum
  }

  test("AVG of integers adds exactly: no overflow near the BIGINT limits, one rounding") {
    val avg = IntegralAverage(LongType)
    assert(both(avg, Long.MaxValue, Long.MaxValue) == Long.MaxValue.toDouble)
    assert(both(avg, Long.MinValue, Long.MinValue, Long.MinValue) == Long.MinValue.toDouble)
    assert(both(avg, Long.MaxValue, Long.MaxValue, Long.MinValue, Long.MinValue, 4L) == 0.4)
    val big = 1L << 53
    assert(both(avg, big, big + 3, big + 6) == (3 * big + 9).toDouble / 3) // the exact sum
    assert(both(FloatingAverage(FloatType), 1.5f, 2.5f) == 2.0)
  }

  test("SUM of doubles: NaN and infinities as IEEE addition, -0.0 summed from 0.0") {
    assert(isNaN(both(FloatingSum(DoubleType), Double.PositiveInfinity,
      Double.NegativeInfinity)))
    assert(both(FloatingSum(DoubleType), -0.0).asInstanceOf[Double].equals(0.0))
  }

  test("partials survive their row form (state, shuffle), AVG in two columns") {
    val layout = new AggregateLayout(Array(IntegralAverage(LongType), FloatingExtreme(DoubleType,
      min = true), CountOf(all = true)))
    val p = layout.empty
    layout.add(p, 0, Long.MaxValue)
    layout.add(p, 0, Long.MaxValue)
    layout.add(p, 1, FloatingExtreme(DoubleType, min = true).readValue(NaN))
    p.n(2) += 1
    val values = layout.partialValues(p)
    assert(layout.partialFields(j => s"c$j").map(_.dataType) ==
      Seq(LongType, LongType, LongType, DoubleType, LongType))
    val back = layout.partialsOf(values.toIndexedSeq, 0)
    assert(back.n.toSeq == p.n.toSeq && back.acc.toSeq == p.acc.toSeq &&
      back.high.toSeq == p.high.toSeq)
    assert(layout.results(back).head == Long.MaxValue.toDouble)
    val empty = layout.partialsOf(layout.partialValues(layout.empty).toIndexedSeq, 0)
    assert(layout.results(empty).toSeq == Seq(null, null, 0L))
  }
}
