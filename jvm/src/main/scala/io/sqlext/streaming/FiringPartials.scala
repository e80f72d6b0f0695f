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
  }

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

  private val functions = spec.aggregates.map(_._1)

  def values(f: Firing[Row, Row]): Seq[Any] = functions.zip(columns).map {
    case ("count", -1) => f.tuples.length.toLong
    case ("count", c) => f.tuples.count(t => !t.isNullAt(c)).toLong
    case ("sum", c) =>
      val present = f.tuples.filterNot(_.isNullAt(c))
      if (present.isEmpty) null
      else input(c).dataType match {
        case FloatType | DoubleType => present.map(t => t.getAs[Number](c).doubleValue()).sum
        case _ => present.map(t => t.getAs[Number](c).longValue()).sum
      }
    case (function, c) =>
      val present = f.tuples.filterNot(_.isNullAt(c)).map(_.get(c))
      if (present.isEmpty) null
      else if (function == "min") present.min(FiringPartials.NumberOrdering)
      else present.max(FiringPartials.NumberOrdering)
  }
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
