package io.sqlext.optimizer

import org.apache.spark.sql.types._
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * Which aggregates a window operator can keep as partials, the one decision for batch
 * ([[IncrementalWindowAggregate]], over Catalyst's aggregates) and streaming (the Python
 * rewriter, over sqlglot's, through [[kindsJson]]): SUM, AVG, MIN and MAX of a non-decimal
 * number, COUNT of one column or of *; never DISTINCT or FILTER. Integer inputs add exactly, in
 * longs; floating ones in doubles.
 */
object PartialAggregates {

  def isIntegral(dataType: DataType): Boolean = dataType match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }

  def isNumber(dataType: DataType): Boolean = isIntegral(dataType) || (dataType match {
    case FloatType | DoubleType => true
    case _ => false
  })

  /** The partial kind of `function` (sum, avg, min, max, count) over an input of `inputType`
   *  (None: COUNT(*)), if it has one. */
  def kindOf(function: String, inputType: Option[DataType], distinct: Boolean,
      filtered: Boolean): Option[String] =
    if (distinct || filtered) None
    else (function, inputType) match {
      case ("count", _) => Some("count")
      case ("sum" | "avg" | "min" | "max", Some(t)) if isNumber(t) => Some(function)
      case _ => None
    }

  /** The Python rewriter's entry: a JSON list of {function, type (Spark's type string, or "*"),
   *  distinct, filtered}; the JSON list of their kinds, or null when any has none. */
  def kindsJson(aggregates: String): String = {
    implicit val formats: Formats = DefaultFormats
    val kinds = JsonMethods.parse(aggregates).children.map { a =>
      val inputType = (a \ "type").extract[String] match {
        case "*" => None
        case t => Some(DataType.fromDDL(t))
      }
      kindOf((a \ "function").extract[String], inputType, (a \ "distinct").extract[Boolean],
        (a \ "filtered").extract[Boolean])
    }
    if (kinds.contains(None)) null
    else JsonMethods.compact(JArray(kinds.flatten.map(JString(_))))
  }
}
