package io.sqlext.access

import java.util.Locale

import scala.util.control.NonFatal

import io.sqlext.SqlExtErrors
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, HiveTableRelation}
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, Cast,
  CurrentDatabase, CurrentUser, ExprId, Expression, Literal, NamedExpression, RuntimeReplaceable,
  SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{AnalysisHelper, Filter, LocalRelation,
  LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.sqlext.CatalystPlans
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{BooleanType, DataType}

/**
 * Row filters and column masks of the `tables` rules (`filter`, `columns`), applied by rewriting
 * a user's analysed plan before any check or optimization sees it: each relation that reads a
 * table whose first matching rule filters or masks it for the plan's user (a batch or streaming
 * read, under a view, a CTE, a subquery, a join, time travel, a change data feed, a MERGE's
 * source) becomes the table's rows as the rule lets the user read them, a
 * [[RowPolicyBarrier]] over a Filter. Every plan shape built on the relation inherits them: a
 * window sees only the filtered rows and the masked values, a CTAS copies them. A write's
 * target is left as it is (the rules let such a user only read the table: `AccessRules`).
 *
 * The filter and masks are placeholders ([[RowFilterOf]], [[ColumnMaskOf]]) that
 * [[ApplyRowPolicies]] replaces with the rule's expressions as they are when the plan is
 * optimized: a stream applies a changed rule from its next micro-batch. `current_user()` in a
 * rule is the user the plan is for.
 */
case class RowPolicies(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!AccessRules.configured) plan
    else AccessChecks.checkedUser(session).fold(plan)(RowPolicies.wrap(session, plan, _))
}

object RowPolicies {
  /** The Delta and Spark commands that write the table a child of theirs reads (the target of
   *  DELETE, UPDATE, MERGE), by the member that holds it. */
  private val Targets = Map("DeleteFromTable" -> "table", "UpdateTable" -> "table",
    "MergeIntoTable" -> "targetTable", "ReplaceData" -> "table", "WriteDelta" -> "table",
    "DeltaDelete" -> "child", "DeltaUpdateTable" -> "child", "DeltaMergeInto" -> "target")

  private def wrap(session: SparkSession, plan: LogicalPlan, user: String): LogicalPlan = {
    val targets = PlanWalk.nodes(plan).flatMap { node =>
      Targets.get(node.getClass.getSimpleName).flatMap(PlanWalk.member(node, _)).toSeq
        .collect { case target: LogicalPlan => target.collect { case n => n } }.flatten
    }
    def rewrite(node: LogicalPlan): LogicalPlan = node match {
      case barrier: RowPolicyBarrier => barrier
      case target if targets.exists(_ eq target) => target
      case relation if table(relation).isDefined =>
        val (db, name) = table(relation).get
        AccessRules.restriction(user, db, name).fold(relation) { rule =>
          barrier(session, user, db, name, rule, relation)
        }
      case other =>
        other.mapChildren(rewrite).transformExpressions {
          case subquery: SubqueryExpression => subquery.withNewPlan(rewrite(subquery.plan))
        }
    }
    AnalysisHelper.allowInvokingTransformsInAnalyzer(rewrite(plan))
  }

  /** The catalog table a relation reads, batch or streaming. */
  private def table(node: LogicalPlan): Option[(String, String)] = node match {
    case LogicalRelation(_, _, Some(t), _, _) => Names.ofCatalogTable(t)
    case r: HiveTableRelation => Some(Names.ofIdentifier(r.tableMeta.identifier))
    case r: DataSourceV2Relation => r.identifier.flatMap(Names.ofConnector)
    case other if other.getClass.getSimpleName == "StreamingRelationV2" =>
      PlanWalk.member(other, "identifier").collect { case Some(id: Identifier) => id }
        .flatMap(Names.ofConnector)
    case other if other.getClass.getSimpleName == "StreamingRelation" =>
      PlanWalk.member(other, "dataSource").flatMap(PlanWalk.member(_, "catalogTable"))
        .collect { case Some(t: CatalogTable) => t }.flatMap(Names.ofCatalogTable)
    case _ => None
  }

  /** `relation` of `db`.`table` as `rule` lets `user` read it. The rule's expressions are built
   *  once here as well, so that a rule that is not valid for the table is an error of this
   *  statement, naming it. */
  private def barrier(session: SparkSession, user: String, db: String, table: String,
      rule: AccessRules.TableRule, relation: LogicalPlan): LogicalPlan = {
    val attributes = relation.output
    rule.columns.find(c => !attributes.exists(_.name.equalsIgnoreCase(c.name))).foreach { c =>
      throw invalid(db, table, s"names the column ${c.name}, which the table does not have")
    }
    val filtered = rule.filter.fold(relation) { text =>
      val placeholder = RowFilterOf(user, db, table, text, attributes)
      filterNow(session, placeholder)  // checked now
      Filter(placeholder, relation)
    }
    val values: Seq[Expression] = attributes.map { attribute =>
      rule.columns.find(_.name.equalsIgnoreCase(attribute.name)) match {
        case Some(column) =>
          val placeholder = ColumnMaskOf(user, db, table, attribute.name, column.mask.isEmpty,
            column.mask.getOrElse("hidden"), attribute.dataType, attributes)
          maskNow(session, placeholder)  // checked now
          placeholder
        case None => attribute
      }
    }
    // Complete as it is: the analyzer's later rules leave it so (CleanupAliases).
    CatalystPlans.analyzed(RowPolicyBarrier(attributes, values, filtered))
  }

  /** The row filter as the rules say now (TRUE where they no longer filter the table). */
  def filterNow(session: SparkSession, filter: RowFilterOf): Expression =
    AccessRules.restriction(filter.user, filter.database, filter.table).flatMap(_.filter) match {
      case None => Literal(true)
      case Some(text) => build(session, filter.user, filter.database, filter.table, text,
        filter.children, BooleanType, "row filter")
    }

  /** The column as the rules say now: its mask, NULL where it is hidden, itself where neither. */
  def maskNow(session: SparkSession, mask: ColumnMaskOf): Expression = {
    val column = AccessRules.restriction(mask.user, mask.database, mask.table).toSeq
      .flatMap(_.columns).find(_.name.equalsIgnoreCase(mask.column))
    column match {
      case None => mask.children.collectFirst {
        case a: Attribute if a.name.equalsIgnoreCase(mask.column) => a
      }.getOrElse(Literal(null, mask.dataType))
      case Some(AccessRules.ColumnRule(_, None)) => Literal(null, mask.dataType)
      case Some(AccessRules.ColumnRule(_, Some(text))) => build(session, mask.user,
        mask.database, mask.table, text, mask.children, mask.dataType,
        s"mask of column ${mask.column}")
    }
  }

  /** The rule's SQL expression `text` over the table's columns `attributes`, resolved as the
   *  optimizer takes it: `current_user()` is `user`, functions that Spark replaces before
   *  optimizing are replaced, of `dataType` (a cast where it differs). */
  private def build(session: SparkSession, user: String, db: String, table: String,
      text: String, attributes: Seq[Expression], dataType: DataType, what: String): Expression = {
    val columns = attributes.collect { case a: AttributeReference => a }
    val resolved = try {
      val parsed = session.sessionState.sqlParser.parseExpression(text)
      val plan = Project(Seq(Alias(parsed, "policy")()), LocalRelation(columns))
      session.sessionState.analyzer.executeAndCheck(plan, new QueryPlanningTracker) match {
        case Project(Seq(Alias(expression, _)), _) => expression
        case other => throw new IllegalStateException(s"unexpected plan $other")
      }
    } catch {
      case e: org.apache.spark.sql.AnalysisException => throw invalid(db, table,
        s"has a $what ($text) that is not an expression over its columns: ${e.getMessage}")
      case NonFatal(e) => throw invalid(db, table, s"has a $what ($text) that does not parse: " +
        e.getMessage)
    }
    if (resolved.exists(_.isInstanceOf[SubqueryExpression])) {
      throw invalid(db, table, s"has a $what ($text) that reads other tables: a rule's " +
        "expressions read the table's own columns only")
    }
    val ready = resolved.transformDown {
      case _: CurrentUser => Literal(user)
      case _: CurrentDatabase => Literal(session.catalog.currentDatabase)
      case replaceable: RuntimeReplaceable => replaceable.replacement
    }
    if (ready.dataType == dataType) ready
    else if (what == "row filter") {
      throw invalid(db, table, s"has a row filter ($text) of type ${ready.dataType.sql}, " +
        "not BOOLEAN")
    } else if (Cast.canCast(ready.dataType, dataType)) Cast(ready, dataType)
    else throw invalid(db, table, s"has a $what ($text) of type ${ready.dataType.sql}, which " +
      s"does not cast to the column's ${dataType.sql}")
  }

  private def invalid(db: String, table: String, why: String) =
    SqlExtErrors.analysis("SQL_EXT_ACCESS_DENIED", s"The server's access rules cannot give " +
      s"$db.$table to this user: the first matching rule of the access rules file $why. An " +
      "admin of the server fixes the rule.")

  /** The hidden columns a statement uses (refused: rule `tables`): a column of a table hidden
   *  from the user that reaches the statement's result or a command's query (`SELECT *`,
   *  `TABLE t`, CTAS), or any computation above its [[RowPolicyBarrier]] (a filter, a join, an
   *  aggregate, a sort). A projection that only passes the column on (`SELECT *` in a subquery,
   *  a windowed query's input) does not use it: its value there is NULL. */
  def hiddenUses(plan: LogicalPlan): Seq[Use] = {
    val barriers = PlanWalk.nodes(plan).collect { case b: RowPolicyBarrier => b }
    val hidden = scala.collection.mutable.Map[ExprId, ColumnMaskOf]()
    barriers.foreach(b => b.output.zip(b.values).foreach {
      case (column, mask: ColumnMaskOf) if mask.hidden => hidden(column.exprId) = mask
      case _ =>
    })
    if (hidden.isEmpty) return Nil
    // The column under other names: passed on by a projection (a view's, a subquery's), or by
    // a union's position.
    val nodes = PlanWalk.nodes(plan).filter(_.resolved)
    val renamed: Seq[(ExprId, ExprId)] = nodes.flatMap {
      case project: Project => project.projectList.collect {
        case alias @ Alias(child, _) if passedOn(alias) => child.references.map(_.exprId)
          .map(_ -> alias.exprId)
      }.flatten
      case union: org.apache.spark.sql.catalyst.plans.logical.Union =>
        union.children.flatMap(_.output.zip(union.output).map { case (c, u) =>
          c.exprId -> u.exprId
        })
      case _ => Nil
    }
    var grown = true
    while (grown) {
      val more = renamed.collect {
        case (from, to) if hidden.contains(from) && !hidden.contains(to) => to -> hidden(from)
      }
      more.foreach { case (to, mask) => hidden(to) = mask }
      grown = more.nonEmpty
    }
    val used = scala.collection.mutable.Set[ExprId]()
    def walk(node: LogicalPlan): Unit = node match {
      case _: RowPolicyBarrier =>
      case other =>
        // The columns its own expressions name (a subquery's are its plan's, walked below).
        used ++= (other match {
          case project: Project => project.projectList.filterNot(passedOn)
          case _ => other.expressions
        }).flatMap(_.collect { case a: Attribute => a.exprId })
        other match {  // a command's query: what it copies
          case _ if other.getClass.getSimpleName == "UncacheTable" =>
          case command: org.apache.spark.sql.catalyst.plans.logical.Command =>
            used ++= command.children.filter(_.resolved).flatMap(_.output.map(_.exprId))
          case _ =>
        }
        // A subquery's result is compared or returned (IN, a scalar subquery), not EXISTS'.
        other.expressions.flatMap(_.collect { case s: SubqueryExpression => s }).foreach { s =>
          if (s.getClass.getSimpleName != "Exists" && s.plan.resolved) {
            used ++= s.plan.output.map(_.exprId)
          }
          walk(s.plan)
        }
        other.children.foreach(walk)
        // A plan a node keeps beside its children (a view's definition): what it names.
        other.productIterator.foreach {
          case inner: LogicalPlan if !other.children.exists(_ eq inner) && inner.resolved =>
            walk(inner)
          case _ =>
        }
    }
    walk(plan)
    val result = if (plan.resolved) plan.output.map(_.exprId) else Nil
    (used ++ result).toSeq.flatMap(hidden.get).distinct.map { m =>
      Use.ReadsHidden(m.database, m.table, m.column.toLowerCase(Locale.ROOT))
    }
  }

  /** The tables `plan` reads that the rules now filter or mask for `user` but that it reads
   *  as they are (a stream planned before the rule came). */
  def unguarded(plan: LogicalPlan, user: String): Seq[(String, String)] = {
    def walk(node: LogicalPlan): Seq[(String, String)] = node match {
      case _: RowPolicyBarrier => Nil
      case relation if table(relation).isDefined => table(relation).toSeq
      case other => other.children.flatMap(walk) ++ other.subqueries.flatMap(walk)
    }
    walk(plan).distinct.filter { case (db, t) => AccessRules.restriction(user, db, t).isDefined }
  }

  /** A projection of a column as it is (under its own name, perhaps cast: a view's columns). */
  private def passedOn(column: NamedExpression): Boolean = column match {
    case _: Attribute => true
    case Alias(child, name) => child match {
      case a: Attribute => a.name.equalsIgnoreCase(name)
      case c: Cast => c.child match {
        case a: Attribute => a.name.equalsIgnoreCase(name)
        case _ => false
      }
      case u: org.apache.spark.sql.catalyst.expressions.UpCast =>
        u.child match { case a: Attribute => a.name.equalsIgnoreCase(name); case _ => false }
      case _ => false
    }
    case _ => false
  }
}

/** The optimizer's step that puts the access rules' row filters and column masks in place of
 *  their placeholders ([[RowPolicies]]), as the rules are now. */
case class ApplyRowPolicies(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!AccessRules.configured ||
        plan.collectWithSubqueries { case b: RowPolicyBarrier => b }.isEmpty) plan
    else plan.transformAllExpressions {
    case filter: RowFilterOf => RowPolicies.filterNow(session, filter)
    case mask: ColumnMaskOf => RowPolicies.maskNow(session, mask)
  }
}
