package io.sqlext.streaming

import io.sqlext.optimizer.PartialAggregates
import io.sqlext.window.{Firing, WindowSpec}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._

/**
 * A firing reduced to one row: its partition key, firing columns and one partial aggregate per
 * (function, column) of the spec (__sx_a0, __sx_a1, ...), which the query's aggregation merges
 * (SUM of sums and counts, MIN of mins, MAX of maxes). Spares the streaming query from handing
 * every tuple of every firing (a sliding window's tuples many times over) to the aggregation.
 */
final class FiringPartials(spec: WindowSpec, input: StructType, keyColumns: Seq[String])
    extends Serializable {
  private val keyIndexes = keyColumns.map(input.fieldIndex)
  private val columns = spec.aggregates.map { case (_, c) =>
    if (c == "*") -1 else input.fieldIndex(c)
  }.toIndexedSeq

  def schema: Seq[StructField] = spec.aggregates.zip(columns).zipWithIndex.map {
    case (((function, _), column), i) =>
      val dataType = function match {
        case "count" => LongType
        case "sum" => if (isFloating(column)) DoubleType else LongType
        case _ => input(column).dataType
      }
      StructField(s"__sx_a$i", dataType, nullable = true)
  }

  def keyValues(tuple: Row): Seq[Any] = keyIndexes.map(tuple.get)

  private val functions = spec.aggregates.map(_._1).toIndexedSeq

  /** The partials of a firing's tuples in Spark's internal form (the TUMBLING and SLIDING
   *  processors'): each computed in one unboxed pass over the tuples, boxed once. */
  def over(tuples: scala.collection.IndexedSeq[InternalRow]): Seq[Any] =
    overInternal.map(_.over(tuples)).toSeq

  private val overInternal: Array[FiringPartials.OverTuples] =
    functions.zip(columns).map[FiringPartials.OverTuples] { case (function, c) =>
      FiringPartials.OverTuples(function, c, if (c < 0) NullType else input(c).dataType)
    }.toArray

  /** Partials before any tuple: COUNT 0, the others NULL (no value yet). */
  def empty: Array[Any] = functions.map(f => if (f == "count") 0L else null).toArray

  /** Adds one tuple to the partials held in `values` from index `at` on, in place. */
  def add(values: Array[Any], tuple: Row, at: Int = 0): Unit = {
    var i = 0
    while (i < adders.length) {
      adders(i)(values, at + i, tuple)
      i += 1
    }
  }

  /** Merges partials of the same spec held in `from` from index `first` on into those held in
   *  `values` from index `at` on, in place (a pane's partials and a map task's for it). */
  def merge(values: Array[Any], at: Int, from: Row, first: Int): Unit = {
    var i = 0
    while (i < mergers.length) {
      if (!from.isNullAt(first + i)) {
        val x = from.get(first + i)
        values(at + i) = if (values(at + i) == null) x else mergers(i)(values(at + i), x)
      }
      i += 1
    }
  }

  private val mergers: Array[(Any, Any) => Any] = functions.zip(columns).map[(Any, Any) => Any] {
    case ("count", _) => (a, b) => a.asInstanceOf[Long] + b.asInstanceOf[Long]
    case ("sum", c) if isFloating(c) => (a, b) => a.asInstanceOf[Double] + b.asInstanceOf[Double]
    case ("sum", _) => (a, b) => a.asInstanceOf[Long] + b.asInstanceOf[Long]
    case ("min", _) => (a, b) => if (FiringPartials.NumberOrdering.lt(b, a)) b else a
    case (_, _) => (a, b) => if (FiringPartials.NumberOrdering.gt(b, a)) b else a
  }.toArray

  /** One step per partial, chosen once (a hot path: every tuple of every pane). */
  private val adders: Array[(Array[Any], Int, Row) => Unit] =
    functions.zip(columns).map[(Array[Any], Int, Row) => Unit] {
      case ("count", -1) => (v, j, _) => v(j) = v(j).asInstanceOf[Long] + 1L
      case ("count", c) => (v, j, t) => if (!t.isNullAt(c)) v(j) = v(j).asInstanceOf[Long] + 1L
      case ("sum", c) if isFloating(c) => (v, j, t) => if (!t.isNullAt(c)) {
        val x = t.getAs[Number](c).doubleValue()
        v(j) = if (v(j) == null) x else v(j).asInstanceOf[Double] + x
      }
      case ("sum", c) => (v, j, t) => if (!t.isNullAt(c)) {
        val x = t.getAs[Number](c).longValue()
        v(j) = if (v(j) == null) x else v(j).asInstanceOf[Long] + x
      }
      case (function, c) =>
        val better: (Any, Any) => Boolean = if (function == "min") {
          FiringPartials.NumberOrdering.lt
        } else FiringPartials.NumberOrdering.gt
        (v, j, t) => if (!t.isNullAt(c)) {
          val x = t.get(c)
          if (v(j) == null || better(x, v(j))) v(j) = x
        }
    }.toArray

  /** Sums of integers add exactly in longs ([[PartialAggregates]]), others in doubles. */
  private def isFloating(column: Int): Boolean =
    !PartialAggregates.isIntegral(input(column).dataType)
}

object FiringPartials {
  /** Numbers of one column's type; NaN above everything, as Spark orders them. */
  val NumberOrdering: Ordering[Any] = (a: Any, b: Any) => (a, b) match {
    case (x: java.lang.Double, y: java.lang.Double) => java.lang.Double.compare(x, y)
    case (x: java.lang.Float, y: java.lang.Float) => java.lang.Float.compare(x, y)
    case (x: Number, y: Number) => java.lang.Long.compare(x.longValue(), y.longValue())
    case _ => throw new IllegalArgumentException(s"MIN/MAX partials over $a, $b")
  }

  def enabled(spec: WindowSpec): Boolean = spec.aggregates.nonEmpty

  /** One partial over a firing's tuples in Spark's internal form, by the same rules as `add`:
   *  NULLs skipped, NULL when no value (COUNT 0), integer sums in longs, others in doubles,
   *  MIN and MAX in the column's type with NaN above everything. */
  private sealed abstract class OverTuples extends Serializable {
    def over(tuples: scala.collection.IndexedSeq[InternalRow]): Any
  }

  private object OverTuples {
    def apply(function: String, column: Int, dataType: DataType): OverTuples =
      (function, dataType) match {
        case ("count", _) if column < 0 => new CountAll
        case ("count", _) => new CountOf(column)
        case ("sum", _) if PartialAggregates.isIntegral(dataType) => new LongSum(column, dataType)
        case ("sum", _) => new DoubleSum(column, dataType)
        case (_, FloatType | DoubleType) => new FloatingExtreme(column, dataType, function == "min")
        case (_, _) => new IntegralExtreme(column, dataType, function == "min")
      }
  }

  private final class CountAll extends OverTuples {
    override def over(tuples: scala.collection.IndexedSeq[InternalRow]): Any = tuples.length.toLong
  }

  private final class CountOf(c: Int) extends OverTuples {
    override def over(tuples: scala.collection.IndexedSeq[InternalRow]): Any = {
      var n = 0L
      var i = 0
      while (i < tuples.length) { if (!tuples(i).isNullAt(c)) n += 1; i += 1 }
      n
    }
  }

  private def longOf(row: InternalRow, c: Int, dataType: DataType): Long = dataType match {
    case LongType => row.getLong(c)
    case IntegerType => row.getInt(c).toLong
    case ShortType => row.getShort(c).toLong
    case _ => row.getByte(c).toLong
  }

  private def doubleOf(row: InternalRow, c: Int, dataType: DataType): Double = dataType match {
    case DoubleType => row.getDouble(c)
    case FloatType => row.getFloat(c).toDouble
    case _ => longOf(row, c, dataType).toDouble
  }

  private final class LongSum(c: Int, dataType: DataType) extends OverTuples {
    override def over(tuples: scala.collection.IndexedSeq[InternalRow]): Any = {
      var sum = 0L
      var any = false
      var i = 0
      if (dataType == LongType) {
        while (i < tuples.length) {
          val t = tuples(i)
          if (!t.isNullAt(c)) { sum += t.getLong(c); any = true }
          i += 1
        }
      } else {
        while (i < tuples.length) {
          val t = tuples(i)
          if (!t.isNullAt(c)) { sum += longOf(t, c, dataType); any = true }
          i += 1
        }
      }
      if (any) sum else null
    }
  }

  private final class DoubleSum(c: Int, dataType: DataType) extends OverTuples {
    override def over(tuples: scala.collection.IndexedSeq[InternalRow]): Any = {
      var sum = 0.0
      var any = false
      var i = 0
      if (dataType == DoubleType) {
        while (i < tuples.length) {
          val t = tuples(i)
          if (!t.isNullAt(c)) { sum += t.getDouble(c); any = true }
          i += 1
        }
      } else {
        while (i < tuples.length) {
          val t = tuples(i)
          if (!t.isNullAt(c)) { sum += doubleOf(t, c, dataType); any = true }
          i += 1
        }
      }
      if (any) sum else null
    }
  }

  /** MIN or MAX of a DOUBLE or FLOAT column; the result in the column's type. */
  private final class FloatingExtreme(c: Int, dataType: DataType, min: Boolean)
      extends OverTuples {
    override def over(tuples: scala.collection.IndexedSeq[InternalRow]): Any = {
      var best = 0.0
      var any = false
      var i = 0
      while (i < tuples.length) {
        val t = tuples(i)
        if (!t.isNullAt(c)) {
          val x = doubleOf(t, c, dataType)
          val order = java.lang.Double.compare(x, best) // NaN above everything, as Spark
          if (!any || (if (min) order < 0 else order > 0)) best = x
          any = true
        }
        i += 1
      }
      if (!any) null else if (dataType == FloatType) best.toFloat else best
    }
  }

  /** MIN or MAX of an integer column; the result in the column's type. */
  private final class IntegralExtreme(c: Int, dataType: DataType, min: Boolean)
      extends OverTuples {
    override def over(tuples: scala.collection.IndexedSeq[InternalRow]): Any = {
      var best = 0L
      var any = false
      var i = 0
      while (i < tuples.length) {
        val t = tuples(i)
        if (!t.isNullAt(c)) {
          val x = longOf(t, c, dataType)
          if (!any || (if (min) x < best else x > best)) best = x
          any = true
        }
        i += 1
      }
      if (!any) null else dataType match {
        case IntegerType => best.toInt
        case ShortType => best.toShort
        case ByteType => best.toByte
        case _ => best
      }
    }
  }
}
