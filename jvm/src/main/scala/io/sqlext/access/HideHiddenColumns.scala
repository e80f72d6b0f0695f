package io.sqlext.access

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.ResolvedTable
import org.apache.spark.sql.catalyst.expressions.{In, Literal, Lower, Not}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * DESCRIBE TABLE and SHOW COLUMNS list, for a user held to the access rules, no column their
 * table's first matching rule hides (`allow: false`), as the JDBC metadata calls do not
 * (`MetadataFilter`): the listing's rows of those columns are filtered out by name.
 */
case class HideHiddenColumns(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!AccessRules.configured) plan
    else AccessChecks.checkedUser(session).fold(plan) { user =>
      plan.resolveOperatorsUp {
        case listing if HideHiddenColumns.Listings(listing.getClass.getSimpleName) =>
          val hidden = HideHiddenColumns.table(listing, session.catalog.currentDatabase).toSeq
            .flatMap { case (db, t) => HideHiddenColumns.hidden(user, db, t) }
          listing.output.find(_.name.equalsIgnoreCase("col_name")) match {
            case Some(column) if hidden.nonEmpty =>
              Filter(Not(In(Lower(column), hidden.map(h => Literal(h)))), listing)
            case _ => listing
          }
      }
    }
}

object HideHiddenColumns {
  private val Listings = Set("DescribeRelation", "DescribeTableCommand", "ShowColumns",
    "ShowColumnsCommand", "ShowDeltaTableColumnsCommand")

  /** The columns (lower case) the first matching rule hides from `user`. */
  def hidden(user: String, db: String, table: String): Seq[String] =
    AccessRules.restriction(user, db, table).toSeq.flatMap(_.columns)
      .filter(_.mask.isEmpty).map(_.name.toLowerCase(java.util.Locale.ROOT))

  private def table(listing: LogicalPlan, current: String): Option[(String, String)] =
    (listing.productIterator ++ listing.children.iterator).collectFirst {
      case id: TableIdentifier if !Names.isPath(id) => Names.ofIdentifier(id)
      case r: ResolvedTable if Names.ofConnector(r.identifier).isDefined =>
        Names.ofConnector(r.identifier).get
    }.map { case (db, t) => (if (db.isEmpty) current else db, t) }
}
