package io.sqlext.execution

import io.sqlext.replay.{GlobalCountReplay, PaneExpansion, ReplayLayout, ReplayMetrics,
  WindowReplay}
import io.sqlext.window.{Family, Policy, WindowSpec}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

/**
 * Batch driver of [[io.sqlext.plans.logical.WindowAssign]]. Partitions are independent, so the
 * input is clustered by partition key and sorted into arrival order, and each task replays its
 * keys one after another through the pure state machines ([[WindowReplay]]); PUNCT(expr)
 * markers and PARTITION EVICTION act across partitions, so they see one global arrival order.
 */
case class WindowAssignExec(
    spec: WindowSpec,
    inputs: Seq[Attribute],
    metaOutput: Seq[Attribute],
    child: SparkPlan) extends UnaryExecNode with WindowInputRequirements {

  override def output: Seq[Attribute] = child.output ++ metaOutput

  override def producedAttributes: AttributeSet = AttributeSet(metaOutput)

  override lazy val metrics: Map[String, SQLMetric] = ReplayMetrics.create(sparkContext) ++ Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  /** Unpartitioned COUNT numbers its tuples in parallel ([[GlobalCountReplay]]); pane bounds
   *  of a window that straddles two tasks are not known to either, so they need one task. */
  override protected def parallelCount: Boolean = (spec.family match {
    case Family.Tumbling(Policy.Count(_)) => true
    case _ => false
  }) && keyAttrs.isEmpty && !globalOrder &&
    !spec.meta.exists(m => m == "pane_start" || m == "pane_end")

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def doExecute(): RDD[InternalRow] = {
    val layout = ReplayLayout(spec, child.output, metaOutput)
    val metrics = ReplayMetrics.of(longMetric)
    val outputRows = longMetric("numOutputRows")
    if (spec.keepsLateRows) LateRowsWriter.write(spec, layout, child) // before: each run
    if (spec.isPaneExpansion) {
      return PaneExpansion.execute(layout, child, metrics).map { row => outputRows += 1; row }
    }
    if (parallelCount) {
      return GlobalCountReplay.execute(spec, layout, arrivalOrder, child, metrics.firings)
        .map { row => outputRows += 1; row }
    }
    child.execute().mapPartitions { rows =>
      new WindowReplay(spec, layout, metrics).run(rows).map { row => outputRows += 1; row }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): WindowAssignExec =
    copy(child = newChild)
}
