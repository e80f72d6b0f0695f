package io.sqlext.analysis

import io.sqlext.SqlExtErrors
import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{DeserializeToObject, LocalRelation,
  LogicalPlan, SetCatalogAndNamespace}
import org.apache.spark.sql.execution.command.{ResetCommand, SetCommand}

/**
 * A server's statement timeout (`sql-ext thriftserver --query-timeout`, Spark's
 * spark.sql.thriftServer.queryTimeout in the server's configuration) is a ceiling: a session may
 * SET a lower one for its statements, not a higher one or none. Spark itself lets any session
 * SET any value, which would let one client's statement hold the shared server without limit.
 *
 * A connection may also bring the setting when it opens (its JDBC URL's or PyHive's session
 * configuration): Spark applies those to the session directly, with no SET to refuse. Such a
 * session's statements are refused until it SETs a value within the ceiling (or RESETs it).
 */
case class TimeoutCeiling(session: SparkSession) extends (LogicalPlan => Unit) {
  import TimeoutCeiling.Key

  // The server's setting, fixed when it starts (getConf copies the configuration: once a session).
  private lazy val ceiling = session.sparkContext.getConf.getTimeAsSeconds(Key, "0")

  override def apply(plan: LogicalPlan): Unit = if (ceiling > 0) {
    plan match {
      case SetCommand(Some((Key, Some(value)))) =>
        val asked = seconds(value).getOrElse(return)  // Spark's own SET names the bad value
        if (beyond(asked, ceiling)) {
          throw SqlExtErrors.analysis("SQL_EXT_TIMEOUT_ABOVE_CEILING",
            s"SET $Key=$value: this server's statement timeout is " +
            s"$ceiling seconds (--query-timeout); a session may set a lower one, from 1 to " +
            s"$ceiling seconds")
        }
      // How a session gets back within the ceiling; USE, which a client sends as it connects.
      case _: SetCommand | _: ResetCommand | _: SetCatalogAndNamespace =>
      // The plan an encoder resolves as a statement's rows are collected, not a statement.
      case DeserializeToObject(_, _, rows: LocalRelation) if rows.data.isEmpty =>
      case _ =>
        val own = session.sessionState.conf.getConfString(Key, "0")
        if (seconds(own).exists(beyond(_, ceiling))) {
          throw SqlExtErrors.analysis("SQL_EXT_TIMEOUT_ABOVE_CEILING",
            s"this session's statement timeout ($Key=$own, set when " +
            s"the connection opened) is above this server's $ceiling seconds (--query-timeout): " +
            s"SET $Key to a value from 1 to $ceiling seconds, or RESET it")
        }
    }
  }

  private def beyond(asked: Long, ceiling: Long): Boolean = asked <= 0 || asked > ceiling

  private def seconds(value: String): Option[Long] =
    try Some(JavaUtils.timeStringAsSec(value.trim)) catch { case _: NumberFormatException => None }
}

object TimeoutCeiling {
  val Key = "spark.sql.thriftServer.queryTimeout"
}
