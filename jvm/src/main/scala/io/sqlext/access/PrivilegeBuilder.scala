package io.sqlext.access

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Every use an analysed statement makes, in the manner of Apache Kyuubi's AuthZ extension: one
 * walk over the plan that enters every nested plan (`PlanWalk`), and for each node what its
 * expressions call (`CallsJvm`), what its relations read (`RelationUses`) and what it does as a
 * statement (`CommandUses`). The output is typed (`Use`); `AccessChecks` judges it against the
 * server's policy. SQL, a DataFrame, a stream's query and a Connect plan are analysed into the
 * same plans, and so are judged alike.
 */
object PrivilegeBuilder {
  /** The uses of `plan`, those of rule `tables` last. `exists(database, table)`: whether the
   *  catalog has the table. */
  def uses(plan: LogicalPlan, exists: (String, String) => Boolean): Seq[Use] = {
    val nodes = PlanWalk.nodes(plan)
    val statements = nodes.flatMap(CommandUses(_, exists))
    val calls = nodes.flatMap(_.expressions.flatMap(jvmCalls))
    // A statement reads the table (or files) it writes without SELECT (READ FILES): DELETE and
    // UPDATE find their rows; any other table it reads needs it.
    val writtenTables = statements.collect {
      case Use.OnTable(p, db, t) if Privilege.RowWrites(p) => (db, t)
    }.toSet
    val writtenFiles = statements.collect {
      case Use.OnFiles(location, FileAccess.Write, _, _) => sameFile(location)
    }.toSet
    val reads = nodes.flatMap(RelationUses(_)).filterNot {
      case Use.OnTable(Privilege.Select, db, t) => writtenTables((db, t))
      case Use.OnFiles(location, FileAccess.Read, _, _) => writtenFiles(sameFile(location))
      case _ => false
    }
    val all = (calls ++ statements ++ reads).distinct
    val hidden = RowPolicies.hiddenUses(plan)
    all.filterNot(_.isInstanceOf[Use.OnTable]) ++ all.filter(_.isInstanceOf[Use.OnTable]) ++
      (if (hidden.isEmpty || partOfStatement) Nil else hidden)
  }

  /** Whether the plan being checked is part of a statement, which Spark checks alone: a
   *  view's query as it resolves the view (Analyzer's resolveViews, outside the view's analysis
   *  context) or a subquery (CheckAnalysis's checkSubqueryExpression). Its result is what it
   *  passes on to the statement, whose own check says which columns reach a result. Asked only
   *  of a plan whose result holds a hidden column. */
  private def partOfStatement: Boolean = StackWalker.getInstance().walk(frames =>
    frames.limit(96).anyMatch(f => f.getClassName.startsWith("org.apache.spark.sql.catalyst.") &&
      (f.getMethodName.contains("resolveViews") ||
        f.getMethodName.contains("checkSubqueryExpression"))))

  private val JvmCalls = Set("reflect", "java_method", "try_reflect")

  private def jvmCalls(expression: Expression): Seq[Use] = expression.collect {
    case e if e.getClass.getSimpleName == "CallMethodViaReflection" || JvmCalls(e.prettyName) =>
      Use.CallsJvm(s"${e.prettyName}() calls into the server's JVM")
  }

  /** A location as two fields of one plan spell it alike (`file:/a` and `/a/`). */
  private def sameFile(location: String): String =
    location.stripPrefix("file://").stripPrefix("file:").stripSuffix("/")
}
