package io.sqlext.execution

import org.apache.spark.sql.execution.{QueryExecution, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

/** Reads the window operators' metrics of an executed query (also inside adaptive plans). */
object WindowMetrics extends AdaptiveSparkPlanHelper {

  /** Metric name -> value over all window operators of the query (peaks: the largest). */
  def of(execution: QueryExecution): java.util.Map[String, java.lang.Long] = {
    val values = collect(execution.executedPlan) {
      case w: WindowAssignExec => w.metrics
      case w: WindowAggregateExec => w.metrics
    }.flatMap(_.toSeq).groupBy(_._1).map { case (name, metrics) =>
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
