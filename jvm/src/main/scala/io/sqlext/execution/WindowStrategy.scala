package io.sqlext.execution

import io.sqlext.plans.logical.{PackTuples, WindowAggregate, WindowAssign}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/** Plans the extension's logical nodes. */
object WindowStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case WindowAssign(spec, inputs, meta, child) =>
      WindowAssignExec(spec, inputs, meta, planLater(child)) :: Nil
    case WindowAggregate(spec, inputs, keys, meta, aggregates, aggInputs, aggOutput, child) =>
      WindowAggregateExec(spec, inputs, keys, meta, aggregates, aggInputs, aggOutput,
        planLater(child)) :: Nil
    case PackTuples(keys, tuples, child) => PackTuplesExec(keys, tuples, planLater(child)) :: Nil
    case _ => Nil
  }
}
