package io.sqlext.execution

import io.sqlext.aggregate.PartialAggregate
import io.sqlext.replay.{AggregateReplay, ReplayLayout, ReplayMetrics}
import io.sqlext.window.WindowSpec
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.SQLMetric

/** Batch driver of [[io.sqlext.plans.logical.WindowAggregate]] ([[AggregateReplay]]). */
case class WindowAggregateExec(
    spec: WindowSpec,
    inputs: Seq[Attribute],
    partitionAttrs: Seq[Attribute],
    metaOutput: Seq[Attribute],
    aggregates: Seq[PartialAggregate],
    aggregateInputs: Seq[Expression],
    aggregateOutput: Seq[Attribute],
    child: SparkPlan) extends UnaryExecNode with WindowInputRequirements {

  override def output: Seq[Attribute] = partitionAttrs ++ metaOutput ++ aggregateOutput

  override def producedAttributes: AttributeSet = AttributeSet(metaOutput ++ aggregateOutput)

  override lazy val metrics: Map[String, SQLMetric] = ReplayMetrics.create(sparkContext)

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def doExecute(): RDD[InternalRow] = {
    val layout = ReplayLayout(spec, child.output, metaOutput)
    val metrics = ReplayMetrics.of(longMetric)
    child.execute().mapPartitions { rows =>
      new AggregateReplay(spec, layout, aggregates, aggregateInputs, metrics).run(rows)
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): WindowAggregateExec =
    copy(child = newChild)
}
