package io.sqlext.analysis

import io.sqlext.SqlExtErrors
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo,
  FunctionTableSubqueryArgumentExpression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.StringType

/** A table function the rewriter lowers windowed queries to, `name(TABLE(<query>), '<json>')`:
 *  internal, so its registration says so and any other call is refused plainly. */
object GeneratedTableFunction {
  def registration(name: String, usage: String)(build: (String, LogicalPlan) => LogicalPlan)
      : (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) = {
    val info = new ExpressionInfo(getClass.getCanonicalName, null, name, usage,
      "", "", "", "table_funcs", "", "", "internal")
    val builder: Seq[Expression] => LogicalPlan = {
      case Seq(table: FunctionTableSubqueryArgumentExpression, Literal(json, StringType)) =>
        build(json.toString, table.plan)
      case _ =>
        throw SqlExtErrors.analysis("SQL_EXT_INTERNAL_ERROR",
          s"$name expects (TABLE(query), '<json>'): it is generated " +
          "by the sql_ext rewriter and not meant to be called directly")
    }
    (FunctionIdentifier(name), info, builder)
  }
}
