package io.sqlext.optimizer

import io.sqlext.aggregate.{PartialAggregate, PartialAggregates}
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
    // A partial must give Spark's own result type; any other aggregate keeps Spark's plan.
    val partials = found.map(ae => partialOf(ae).filter(_.resultType == ae.dataType))
    if (!groupsByFiringOnly || found.isEmpty || partials.contains(None)) return None
    val inputs = found.map(_.aggregateFunction.children.head)
    if (!inputs.forall(_.references.subsetOf(window.child.outputSet))) return None
    val outputs = found.map { ae =>
      AttributeReference(s"__sx_agg_${ae.aggregateFunction.prettyName}", ae.dataType,
        nullable = true)()
    }
    val replaced = found.zip(outputs).toMap
    val list = aggregates.map(_.transformDown {
      case ae: AggregateExpression => replaced(ae)
    }.asInstanceOf[NamedExpression])
    val node = WindowAggregate(window.spec, window.inputs, partitionAttrs, window.metaOutput,
      partials.flatten, inputs, outputs, window.child)
    Some(Project(list, node))
  }

  /** Catalyst's aggregate as [[PartialAggregates]] decides on it; a SUM checks overflow when
   *  Spark's own would (its evaluation mode, fixed at analysis). */
  private def partialOf(ae: AggregateExpression): Option[PartialAggregate] = {
    val (function, input, ansi) = ae.aggregateFunction match {
      case s @ Sum(child, _) => ("sum", Some(child.dataType), s.evalContext.evalMode == EvalMode.ANSI)
      case Average(child, _) => ("avg", Some(child.dataType), false)
      case Min(child) => ("min", Some(child.dataType), false)
      case Max(child) => ("max", Some(child.dataType), false)
      case Count(Seq(child)) => ("count", Some(child.dataType), false)
      case _ => ("", None, false) // no partials
    }
    PartialAggregates.of(function, input, ae.isDistinct, ae.filter.isDefined, ansi)
  }
}
