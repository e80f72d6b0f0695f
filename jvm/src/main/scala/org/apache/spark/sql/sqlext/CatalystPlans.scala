package org.apache.spark.sql.sqlext

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/** A plan the extension builds complete during analysis, marked analysed (Spark keeps the mark
 *  to its SQL package): the analyzer's later rules leave it as it is (CleanupAliases would take
 *  the names off the columns of a node it does not know). */
object CatalystPlans {
  def analyzed[P <: LogicalPlan](plan: P): P = {
    plan.setAnalyzed()
    plan
  }
}
