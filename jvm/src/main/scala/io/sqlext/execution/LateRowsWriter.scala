package io.sqlext.execution

import io.sqlext.plans.logical.WindowAssign
import io.sqlext.replay.{LateRows, ReplayLayout, ReplayMetrics, WindowReplay}
import io.sqlext.window.WindowSpec
import org.apache.spark.internal.Logging
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.SparkPlan

import scala.collection.mutable.ArrayBuffer

/**
 * LATE ROWS INTO in batch replay: each run of the query replaces the table with the tuples its
 * TIME_INTERVAL window drops as late ([[LateRows]]). A second replay of the window's input
 * finds them, driving the same window ([[WindowReplay]]) with its firings left out; it runs
 * when the query runs, before the query's own rows are computed.
 */
object LateRowsWriter extends Logging {

  def write(spec: WindowSpec, layout: ReplayLayout, child: SparkPlan): Unit = {
    val session = child.session
    val input = DataTypeUtils.fromAttributes(child.output)
    val eventOrdinal = layout.eventOrdinal
    val eventType = input(eventOrdinal).dataType
    val boundType = WindowAssign.paneBoundType(spec, eventType)
    val schema = LateRows.schema(input, eventType, boundType)
    val sourceOrdinals = LateRows.sourceFields(input).map(f => input.fieldIndex(f.name))
    val sourceTypes = sourceOrdinals.map(input(_).dataType)
    // Its own metrics: the query's count the tuples once, in the replay that fires.
    val metrics = ReplayMetrics.of(ReplayMetrics.create(session.sparkContext))
    val rows = child.execute().mapPartitions { tuples =>
      val panes = layout.paneSpec
      val late = ArrayBuffer.empty[InternalRow]
      def keep(tuple: UnsafeRow, time: Long, watermark: Long): Unit = {
        val values = sourceOrdinals.zip(sourceTypes).map { case (i, t) =>
          if (tuple.isNullAt(i)) null else tuple.get(i, t) } ++ Seq(
          tuple.get(eventOrdinal, eventType),
          layout.paneBound(watermark, boundType),
          new GenericArrayData(LateRows.panesOf(panes, time).map { case (start, end) =>
            new GenericInternalRow(Array[Any](layout.paneBound(start, boundType),
              layout.paneBound(end, boundType)))
          }.toArray[Any]))
        late += new GenericInternalRow(values.toArray)
      }
      val replay = new WindowReplay(spec, layout, metrics, Some(keep))
      replay.run(tuples).foreach(_ => ()) // no firings: it only drives the window
      val toRow = CatalystTypeConverters.createToScalaConverter(schema)
      late.iterator.map(r => toRow(r).asInstanceOf[Row])
    }
    session.createDataFrame(rows, schema).write.format("delta").mode("overwrite")
      .option("overwriteSchema", "true").saveAsTable(spec.lateRows)
    logInfo(s"sql_ext window ${spec.policyText}: late rows written to ${spec.lateRows}")
  }
}
