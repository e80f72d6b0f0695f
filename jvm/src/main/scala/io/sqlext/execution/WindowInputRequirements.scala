package io.sqlext.execution

import io.sqlext.replay.ArrivalOrder
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.SparkPlan

/**
 * How a window operator wants its input: clustered by partition key and sorted into arrival
 * order, so each task replays its keys one after another; or, when events act across
 * partitions (PUNCT(expr) markers, PARTITION EVICTION), all tuples in one arrival order.
 */
trait WindowInputRequirements { self: SparkPlan =>
  def spec: WindowSpec
  def inputs: Seq[Attribute]

  protected def column(name: String): Option[Attribute] = inputs.find(_.name == name)
  protected def keyAttrs: Seq[Attribute] = spec.partitionColumns.flatMap(column)

  protected def globalOrder: Boolean = spec.replaysGlobally

  /** An operator that numbers its tuples in parallel sorts inside its tasks. */
  protected def parallelCount: Boolean = false

  protected def arrivalOrder: Seq[SortOrder] = ArrivalOrder.sortOrders(spec, inputs)

  override def requiredChildDistribution: Seq[Distribution] =
    if (spec.isPaneExpansion) UnspecifiedDistribution :: Nil
    else if (parallelCount) OrderedDistribution(arrivalOrder) :: Nil
    else if (globalOrder || keyAttrs.isEmpty) AllTuples :: Nil
    else ClusteredDistribution(keyAttrs) :: Nil

  override def requiredChildOrdering: Seq[Seq[SortOrder]] = {
    val keys = if (globalOrder) Nil else keyAttrs
    if (parallelCount || spec.isPaneExpansion) Seq(Nil)
    else (keys.map(SortOrder(_, Ascending)) ++ arrivalOrder) :: Nil
  }
}
