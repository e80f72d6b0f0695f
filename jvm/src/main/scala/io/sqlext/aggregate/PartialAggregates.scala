package io.sqlext.aggregate

import org.apache.spark.sql.types._
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * Which aggregates a window operator computes from partials: the one decision for batch
 * ([[io.sqlext.optimizer.IncrementalWindowAggregate]], over Catalyst's aggregates) and streaming
 * (the Python rewriter asks through [[kindsJson]], over sqlglot's): COUNT of one column or of *;
 * SUM, AVG, MIN and MAX of an integer, FLOAT or DOUBLE input; never DISTINCT or FILTER. Every
 * other aggregate (a DECIMAL SUM, whose precision Spark widens; STDDEV; a Python UDAF) takes the
 * general path, where Spark's own aggregate runs over each firing's tuples.
 */
object PartialAggregates {

  /** The partial of `function` (sum, avg, min, max, count) over an input of `inputType`
   *  (None: COUNT(*)), if it has one; an integer SUM checks overflow when `ansi`. */
  def of(function: String, inputType: Option[DataType], distinct: Boolean, filtered: Boolean,
      ansi: Boolean): Option[PartialAggregate] = {
    import PartialAggregate.{isFloating, isIntegral}
    if (distinct || filtered) None
    else (function, inputType) match {
      case ("count", t) => Some(CountOf(all = t.isEmpty))
      case ("sum", Some(t)) if isIntegral(t) => Some(IntegralSum(t, ansi))
      case ("sum", Some(t)) if isFloating(t) => Some(FloatingSum(t))
      case ("avg", Some(t)) if isIntegral(t) => Some(IntegralAverage(t))
      case ("avg", Some(t)) if isFloating(t) => Some(FloatingAverage(t))
      case ("min" | "max", Some(t)) if isIntegral(t) =>
        Some(IntegralExtreme(t, min = function == "min"))
      case ("min" | "max", Some(t)) if isFloating(t) =>
        Some(FloatingExtreme(t, min = function == "min"))
      case _ => None
    }
  }

  /** What each column of a partial of `function` holds ([[PartialAggregate.partialTypes]]), as
   *  window_state shows it, given the type of its first column (AVG's sum: a BIGINT for an
   *  integer input, which keeps the sum's high half too). */
  def partialLabels(function: String, column: String, firstType: Option[DataType])
      : Seq[String] = (function, firstType) match {
    case ("avg", Some(LongType)) =>
      Seq(s"sum($column)", s"count($column)", s"sum_high($column)")
    case ("avg", _) => Seq(s"sum($column)", s"count($column)")
    case _ => Seq(s"$function($column)")
  }

  /** The Python rewriter's entry: a JSON list of {function (the SQL name, lower case), type
   *  (Spark's type string, or "*"), distinct, filtered}; the JSON list of their functions, or
   *  null when any has no partial. */
  def kindsJson(aggregates: String): String = {
    implicit val formats: Formats = DefaultFormats
    val found = JsonMethods.parse(aggregates).children.map { a =>
      val function = (a \ "function").extract[String]
      val inputType = (a \ "type").extract[String] match {
        case "*" => None
        case t => Some(DataType.fromDDL(t))
      }
      of(function, inputType, (a \ "distinct").extract[Boolean],
        (a \ "filtered").extract[Boolean], ansi = false).map(_ => function)
    }
    if (found.contains(None)) null
    else JsonMethods.compact(JArray(found.flatten.map(JString(_))))
  }
}
