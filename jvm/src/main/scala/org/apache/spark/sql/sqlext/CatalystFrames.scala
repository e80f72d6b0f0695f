package org.apache.spark.sql.sqlext

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic

/** A DataFrame of the extension's own logical plan (Spark keeps `Dataset.ofRows` to its SQL
 *  package, as it does the conversion of [[CatalystColumns]]). */
object CatalystFrames {
  def of(session: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(session.asInstanceOf[classic.SparkSession], plan)
}
