package io.sqlext.replay

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan

/**
 * TIME_INTERVAL without a watermark: all input is present, so every non-empty pane fires once,
 * on time. That is a pure row-to-panes expansion: each tuple is emitted once per pane that
 * contains it, in place, with no shuffle, sort or single task; Spark's aggregation above
 * groups the panes.
 */
object PaneExpansion {

  def execute(layout: ReplayLayout, child: SparkPlan, metrics: ReplayMetrics): RDD[InternalRow] =
    child.execute().mapPartitions { rows =>
      val panes = layout.paneSpec
      val joiner = layout.outputJoiner
      val metaProjection = layout.metaProjection
      val toUnsafe = layout.unsafeInput
      val firing = layout.spec.expansionFiring
      rows.flatMap { row =>
        if (layout.notWindowable(row)) {
          metrics.notWindowed += 1
          Iterator.empty
        } else {
          val tuple = row match {
            case unsafe: UnsafeRow => unsafe
            case other => toUnsafe(other)
          }
          panes.panesOf(layout.eventTime(row)).map { n =>
            val meta = layout.metaValues(n, firing.event, 0L, null, null, firing.timing)
            joiner.join(tuple, metaProjection(new GenericInternalRow(meta)))
          }
        }
      }
    }
}
