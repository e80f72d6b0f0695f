package io.sqlext.streaming

import io.sqlext.execution.ArrivalOrder
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.streaming.{StatefulProcessorHandle, TTLConfig, ValueState}
import org.apache.spark.sql.types.StructType

/**
 * A micro-batch's tuples in arrival order ([[ArrivalOrder]], as batch replay orders them), and
 * the rows that order cannot place: with ORDER BY, a row whose value is below the highest one
 * an earlier micro-batch processed cannot go back in time. It is replayed where it arrives and
 * counted (SHOW STREAMS out_of_order_rows); the state keeps that highest value.
 */
final class MicroBatchOrder(spec: WindowSpec, input: StructType, counters: StreamCounters)
    extends Serializable {
  private val ordering = ArrivalOrder.rowOrdering(spec, input)
  private val orderIndex = input.fieldNames.indexOf(WindowSpec.OrderColumn)
  private val compare =
    if (orderIndex >= 0) ArrivalOrder.compareValues(input(orderIndex).dataType) else null

  /** The highest ORDER BY value processed (Row(value)), in the processor's state; null
   *  without ORDER BY. */
  @transient private var high: ValueState[Row] = _

  /** Registers its state with the processor's handle (from the processor's init). */
  def init(handle: StatefulProcessorHandle): Unit = if (orderIndex >= 0) {
    val schema = new StructType().add(input(orderIndex).copy(name = "high"))
    high = handle.getValueState[Row]("order_high", Encoders.row(schema), TTLConfig.NONE)
  }

  /** `rows` in arrival order; counts the rows below the highest ORDER BY value of earlier
   *  micro-batches and keeps the new highest. */
  def sorted(rows: Iterator[Row]): Array[Row] = {
    val batch = rows.toArray
    java.util.Arrays.sort(batch, ordering) // stable, in place; linear on rows already in order
    if (orderIndex < 0 || batch.isEmpty) return batch
    val values = batch.iterator.map(_.get(orderIndex)).filter(_ != null).toArray
    val before = if (high.exists()) high.get().get(0) else null
    if (before != null) {
      val late = values.count(v => compare(v, before) < 0)
      if (late > 0) counters.outOfOrder.add(late)
    }
    (values.iterator ++ Option(before)).reduceOption((a, b) => if (compare(a, b) >= 0) a else b)
      .foreach(highest => high.update(Row(highest)))
    batch
  }
}
