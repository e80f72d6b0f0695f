package io.sqlext.execution

import io.sqlext.window.WindowSpec
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

/**
 * Batch driver of [[io.sqlext.plans.logical.WindowAssign]]. Partitions are independent, so the
 * input is clustered by partition key and sorted into arrival order, and each task replays its
 * keys one after another through the pure state machine ([[TumblingReplay]]). A PUNCT(expr)
 * marker flushes every partition at once, so that policy sees all tuples in one arrival order.
 */
case class WindowAssignExec(
    spec: WindowSpec,
    inputs: Seq[Attribute],
    metaOutput: Seq[Attribute],
    child: SparkPlan) extends UnaryExecNode with WindowInputRequirements {

  override def output: Seq[Attribute] = child.output ++ metaOutput

  override def producedAttributes: AttributeSet = AttributeSet(metaOutput)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numNotWindowed" -> SQLMetrics.createMetric(sparkContext,
      "rows not windowed (NULL delta value or arrival time)"),
    "numFirings" -> SQLMetrics.createMetric(sparkContext, "window firings"),
    "numEvictedDropped" -> SQLMetrics.createMetric(sparkContext,
      "tuples of evicted partitions dropped (no EMIT EVICTED)"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  /** Unpartitioned COUNT numbers its tuples in parallel ([[GlobalCountReplay]]); pane bounds
   *  of a window that straddles two tasks are not known to either, so they need one task. */
  override protected def parallelCount: Boolean = spec.kind == "tumbling" &&
    spec.policy == "count" && keyAttrs.isEmpty && !globalOrder &&
    !spec.meta.exists(m => m == "pane_start" || m == "pane_end")

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def doExecute(): RDD[InternalRow] = {
    val layout = ReplayLayout(spec, child.output, metaOutput)
    val metrics = ReplayMetrics(longMetric("numNotWindowed"), longMetric("numFirings"),
      longMetric("numEvictedDropped"))
    val outputRows = longMetric("numOutputRows")
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
