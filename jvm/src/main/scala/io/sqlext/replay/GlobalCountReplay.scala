package io.sqlext.replay

import io.sqlext.Contract
import io.sqlext.window.{Firing, WindowSpec}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, SortOrder, UnsafeRow}
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * An unpartitioned TUMBLING COUNT(n) without a single-task funnel. The input arrives range
 * partitioned by arrival order, so partition i holds a contiguous stretch of the one arrival
 * sequence. A first pass counts the rows of every partition (no sort needed); each task then
 * sorts its stretch locally and numbers its rows globally: tuple number g belongs to window
 * g / n, and only complete windows fire. A window may straddle two tasks; the aggregation above
 * groups by firing, so Spark merges its partial aggregates.
 */
object GlobalCountReplay {

  def execute(
      spec: WindowSpec,
      layout: ReplayLayout,
      arrival: Seq[SortOrder],
      child: SparkPlan,
      firings: SQLMetric): RDD[InternalRow] = {
    val input = child.execute()
    val counts = input.mapPartitions(rows => Iterator.single(rows.size.toLong)).collect()
    val offsets = counts.scanLeft(0L)(_ + _)
    val complete = offsets.last / spec.count * spec.count
    firings += complete / spec.count
    val sorter = SortExec(arrival, global = false, child)
    val n = spec.count
    input.mapPartitionsWithIndex { (partition, rows) =>
      val sorted = sorter.createSorter().sort(rows.asInstanceOf[Iterator[UnsafeRow]])
      val joiner = layout.outputJoiner
      val metaProjection = layout.metaProjection
      // Only the window number changes from row to row; the rest is set once.
      val values = layout.metaValues(0L, Firing.Flush, 0L, null, null)
      val meta = new GenericInternalRow(values)
      val windowSlots = layout.meta.map(_.name).zipWithIndex.collect {
        case (WindowSpec.FireColumn | Contract.WindowIdColumn, i) => i
      }
      var number = offsets(partition)
      sorted.takeWhile(_ => number < complete).map { row =>
        val window: Any = number / n
        windowSlots.foreach(i => values(i) = window)
        number += 1
        joiner.join(row.asInstanceOf[UnsafeRow], metaProjection(meta))
      }
    }
  }
}
