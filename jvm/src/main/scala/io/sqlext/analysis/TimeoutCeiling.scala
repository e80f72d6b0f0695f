package io.sqlext.analysis

import io.sqlext.SqlExtErrors
import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.command.SetCommand

/**
 * A server's statement timeout (`sql-ext thriftserver --query-timeout`, Spark's
 * spark.sql.thriftServer.queryTimeout in the server's configuration) is a ceiling: a session may
 * SET a lower one for its statements, not a higher one or none. Spark itself lets any session
 * SET any value, which would let one client's statement hold the shared server without limit.
 */
case class TimeoutCeiling(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan match {
    case SetCommand(Some((TimeoutCeiling.Key, Some(value)))) =>
      val ceiling = session.sparkContext.getConf.getTimeAsSeconds(TimeoutCeiling.Key, "0")
      val asked = try JavaUtils.timeStringAsSec(value.trim) catch {
        case _: NumberFormatException => return  // Spark's own SET names the bad value
      }
      if (ceiling > 0 && (asked <= 0 || asked > ceiling)) {
        throw SqlExtErrors.analysis(s"SET ${TimeoutCeiling.Key}=$value: this server's statement " +
          s"timeout is $ceiling seconds (--query-timeout); a session may set a lower one, " +
          s"from 1 to $ceiling seconds")
      }
    case _ =>
  }
}

object TimeoutCeiling {
  val Key = "spark.sql.thriftServer.queryTimeout"
}
