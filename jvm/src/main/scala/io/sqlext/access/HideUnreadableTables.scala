package io.sqlext.access

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.ResolvedNamespace
import org.apache.spark.sql.catalyst.expressions.{And, EqualTo, Expression, Literal, Not, Or}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, ShowTables}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * SHOW TABLES and SHOW TABLE EXTENDED (which dbt reads a schema's relations with: its rows
 * carry each table's columns and location) list, for a user held to the access rules, only the
 * tables the rules let them read, as the JDBC metadata calls do (`MetadataFilter`). The
 * database's tables are listed as the statement is analysed and the others filtered out of its
 * rows by name: a filter of literals, which needs no rules where it runs. A session's
 * temporary views stay (they are its own).
 */
case class HideUnreadableTables(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!AccessRules.configured) plan
    else AccessChecks.checkedUser(session).fold(plan) { user =>
      plan.resolveOperatorsUp {
        case show: ShowTables => hide(show, user, show.namespace match {
          case r: ResolvedNamespace if r.namespace.length == 1 => Some(r.namespace.head)
          case _ => None
        })
        case show if show.getClass.getSimpleName == "ShowTablesCommand" =>
          val db = scala.util.Try(show.getClass.getMethod("databaseName").invoke(show))
            .toOption.collect { case Some(name: String) => name }
          hide(show, user, db.orElse(Some(session.catalog.currentDatabase)))
      }
    }

  private def hide(show: LogicalPlan, user: String, database: Option[String]): LogicalPlan = {
    val columns = show.output.map(a => a.name.toLowerCase -> a).toMap
    (database, columns.get("namespace").orElse(columns.get("database")),
        columns.get("tablename")) match {
      case (Some(db), Some(dbColumn), Some(tableColumn)) =>
        val hidden = session.sessionState.catalog.listTables(db)
          .filter(_.database.isDefined)  // temporary views have none: the session's own
          .filterNot(t => AccessRules.readable(user, db, t.table))
        if (hidden.isEmpty) show
        else {
          val any: Expression = hidden.map { t =>
            And(EqualTo(dbColumn, Literal(t.database.get)), EqualTo(tableColumn, Literal(t.table)))
          }.reduce[Expression](Or(_, _))
          Filter(Not(any), show)
        }
      case _ => show
    }
  }
}
