package io.sqlext.optimizer

import io.sqlext.plans.logical.{WindowAggregate, WindowAssign}
import io.sqlext.window.Family
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Copying every tuple into every firing multiplies a SLIDING window's data by window size /
 * trigger period. When a windowed query groups by the firing only (no GROUP BY of its own) and
 * every aggregate has partials ([[PartialAggregates]], the decision streaming shares), this
 * rule hands the aggregation to the window operator, which keeps partial aggregates and
 * emits one row per firing. Anything else keeps the general copying plan.
 */
object IncrementalWindowAggregate extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case agg @ Aggregate(grouping, aggregates, WindowInput(window, projected), _)
        if window.spec.family.isInstanceOf[Family.Sliding] =>
      rewrite(agg, grouping, aggregates, window, projected).getOrElse(agg)
  }

  /** The window under an aggregate, possibly behind a column-pruning projection. */
  private object WindowInput {
    def unapply(plan: LogicalPlan): Option[(WindowAssign, Option[Project])] = plan match {
      case w: WindowAssign => Some((w, None))
      case p @ Project(list, w: WindowAssign) if list.forall(_.isInstanceOf[Attribute]) =>
        Some((w, Some(p)))
      case _ => None
    }
  }

  private def rewrite(
      agg: Aggregate,
      grouping: Seq[Expression],
      aggregates: Seq[NamedExpression],
      window: WindowAssign,
      projected: Option[Project]): Option[LogicalPlan] = {
    val partitionAttrs = window.spec.partitionColumns.flatMap(n =>
      window.child.output.find(_.name == n))
    val groupSet = AttributeSet(partitionAttrs ++ window.metaOutput)
    val groupsByFiringOnly = grouping.forall {
      case a: Attribute => groupSet.contains(a)
      case _ => false
    }
    val found = aggregates.flatMap(_.collect { case ae: AggregateExpression => ae }).distinct
    val kinds = found.map(kindOf)
    if (!groupsByFiringOnly || found.isEmpty || kinds.contains(None)) return None
    val inputs = found.map(_.aggregateFunction.children.head)
    if (!inputs.forall(_.references.subsetOf(window.child.outputSet))) return None
    val outputs = found.zip(kinds.flatten).map { case (ae, kind) =>
      AttributeReference(s"__sx_agg_$kind", ae.dataType, nullable = true)()
    }
    val replaced = found.zip(outputs).toMap
    val list = aggregates.map(_.transformDown {
      case ae: AggregateExpression => replaced(ae)
    }.asInstanceOf[NamedExpression])
    val node = WindowAggregate(window.spec, window.inputs, partitionAttrs, window.metaOutput,
      kinds.flatten, inputs, outputs, window.child)
    Some(Project(list, node))
  }

  /** Catalyst's aggregate as the facts [[PartialAggregates]] decides on. */
  private def kindOf(ae: AggregateExpression): Option[String] = {
    val (function, input) = ae.aggregateFunction match {
      case Sum(child, _) => ("sum", Some(child.dataType))
      case Average(child, _) => ("avg", Some(child.dataType))
      case Min(child) => ("min", Some(child.dataType))
      case Max(child) => ("max", Some(child.dataType))
      case Count(Seq(child)) => ("count", Some(child.dataType))
      case _ => ("", None) // no partials
    }
    PartialAggregates.kindOf(function, input, ae.isDistinct, ae.filter.isDefined)
  }
}
