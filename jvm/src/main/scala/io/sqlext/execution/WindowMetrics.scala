package io.sqlext.execution

import io.sqlext.expressions.CountedNotNull
import org.apache.spark.sql.execution.{FilterExec, QueryExecution}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

/** Reads the window operators' metrics of an executed query (also inside adaptive plans). */
object WindowMetrics extends AdaptiveSparkPlanHelper {

  /** Metric name -> value over all window operators of the query (peaks: the largest). */
  def of(execution: QueryExecution): java.util.Map[String, java.lang.Long] = {
    val operators = collect(execution.executedPlan) {
      case w: WindowAssignExec => w.metrics.toSeq
      case w: WindowAggregateExec => w.metrics.toSeq
    }.flatten
    // Generated plans (ExpandPanes) count NULL event times in a filter expression.
    val filters = collect(execution.executedPlan) { case f: FilterExec =>
      f.condition.collect { case c: CountedNotNull => "numNotWindowed" -> c.metric }
    }.flatten
    val values = (operators ++ filters).groupBy(_._1).map { case (name, metrics) =>
      val numbers = metrics.map(_._2.value)
      name -> java.lang.Long.valueOf(if (name.startsWith("peak")) numbers.max else numbers.sum)
    }
    val out = new java.util.HashMap[String, java.lang.Long]()
    values.foreach { case (k, v) => out.put(k, v) }
    out
  }

  def notWindowedRows(execution: QueryExecution): Long =
    Option(of(execution).get("numNotWindowed")).map(_.longValue).getOrElse(0L)
}
