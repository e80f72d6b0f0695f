package io.sqlext.execution

import org.apache.spark.sql.execution.QueryExecution
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

/** Reads the window operators' metrics of an executed query (also inside adaptive plans). */
object WindowMetrics extends AdaptiveSparkPlanHelper {

  /** Rows that were not windowed because their DELTA value or arrival time was NULL. */
  def notWindowedRows(execution: QueryExecution): Long =
    collect(execution.executedPlan) { case w: WindowAssignExec =>
      w.metrics("numNotWindowed").value
    }.sum
}
