package io.sqlext.access

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.SparkStrategy

/**
 * A table's rows as a `tables` rule lets its user read them ([[RowPolicies]]): `child` is the
 * table's relation under the rule's row filter; `output` its columns, each of which reads as
 * the matching expression of `values` (the column itself, or its mask). The output keeps the
 * columns' names and expression ids, so that the plan above reads the masked values where it
 * read the column. Not a Project: Spark's optimizer moves no predicate or expression of the
 * user's query below it (a predicate evaluated on rows the filter drops, or on a column before
 * its mask, could tell the user of them through an error), and does not take it for a no-op.
 * It is planned as a projection.
 */
case class RowPolicyBarrier(output: Seq[Attribute], values: Seq[Expression], child: LogicalPlan)
    extends UnaryNode {
  require(output.length == values.length, "a value for each column")

  /** The projection it is planned as. */
  def projectList: Seq[NamedExpression] = output.zip(values).map {
    case (column, value: Attribute) if value.exprId == column.exprId => value
    case (column, value) => Alias(value, column.name)(exprId = column.exprId,
      qualifier = column.qualifier)
  }

  override protected def withNewChildInternal(newChild: LogicalPlan): RowPolicyBarrier =
    copy(child = newChild)
}

/** Plans a [[RowPolicyBarrier]] as Spark's projection. */
object RowPolicyStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case barrier: RowPolicyBarrier =>
      ProjectExec(barrier.projectList, planLater(barrier.child)) :: Nil
    case _ => Nil
  }
}
