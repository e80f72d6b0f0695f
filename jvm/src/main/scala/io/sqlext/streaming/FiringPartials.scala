package io.sqlext.streaming

import io.sqlext.window.{Firing, WindowSpec}
import org.apache.spark.sql.Row
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
        case "sum" => input(column).dataType match {
          case FloatType | DoubleType => DoubleType
          case _ => LongType
        }
        case _ => input(column).dataType
      }
      StructField(s"__sx_a$i", dataType, nullable = true)
  }

  def keyValues(tuple: Row): Seq[Any] = keyIndexes.map(tuple.get)

  private val functions = spec.aggregates.map(_._1).toIndexedSeq

  def values(f: Firing[Row, Row]): Seq[Any] = {
    val partials = empty
    f.tuples.foreach(add(partials, _))
    partials.toSeq
  }

  /** Partials before any tuple: COUNT 0, the others NULL (no value yet). */
  def empty: Array[Any] = functions.map(f => if (f == "count") 0L else null).toArray

  /** Adds one tuple to the partials held in `values` from index `at` on, in place. */
  def add(values: Array[Any], tuple: Row, at: Int = 0): Unit = {
    var i = 0
    while (i < columns.length) {
      val c = columns(i)
      if (c == -1) values(at + i) = values(at + i).asInstanceOf[Long] + 1L
      else if (!tuple.isNullAt(c)) {
        val value = tuple.get(c)
        values(at + i) = (functions(i), values(at + i)) match {
          case ("count", n: Long) => n + 1L
          case ("sum", sum) => if (isDouble(i)) {
            (if (sum == null) 0.0 else sum.asInstanceOf[Double]) +
              value.asInstanceOf[Number].doubleValue()
          } else {
            (if (sum == null) 0L else sum.asInstanceOf[Long]) +
              value.asInstanceOf[Number].longValue()
          }
          case ("min", m) => if (m == null || FiringPartials.NumberOrdering.lt(value, m)) value
            else m
          case (_, m) => if (m == null || FiringPartials.NumberOrdering.gt(value, m)) value
            else m
        }
      }
      i += 1
    }
  }

  private val isDouble = columns.map(c => c >= 0 && (input(c).dataType match {
    case FloatType | DoubleType => true
    case _ => false
  })).toArray
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
}
