package io.sqlext.plans.logical

import io.sqlext.aggregate.PartialAggregate
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * A SLIDING window whose aggregates the operator computes itself, incrementally: one output
 * row per firing with the partition columns, the firing's columns and the aggregate values,
 * instead of one row per tuple per firing (see [[io.sqlext.optimizer.IncrementalWindowAggregate]]).
 *
 * @param partitionAttrs the child's partition columns, passed through
 * @param metaOutput the firing's columns (those of the WindowAssign it replaces)
 * @param aggregates one per entry of `aggregateInputs`, computed from partials
 */
case class WindowAggregate(
    spec: WindowSpec,
    inputs: Seq[Attribute],
    partitionAttrs: Seq[Attribute],
    metaOutput: Seq[Attribute],
    aggregates: Seq[PartialAggregate],
    aggregateInputs: Seq[Expression],
    aggregateOutput: Seq[Attribute],
    child: LogicalPlan) extends UnaryNode {

  override def output: Seq[Attribute] = partitionAttrs ++ metaOutput ++ aggregateOutput

  override def producedAttributes: AttributeSet = AttributeSet(metaOutput ++ aggregateOutput)

  override protected def withNewChildInternal(newChild: LogicalPlan): WindowAggregate =
    copy(child = newChild)
}
