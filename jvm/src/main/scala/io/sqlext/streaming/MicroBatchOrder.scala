package io.sqlext.streaming

import io.sqlext.execution.ArrivalOrder
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.Row
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

  /** The state's schema for the highest ORDER BY value processed; None without ORDER BY. */
  val highSchema: Option[StructType] =
    Option.when(orderIndex >= 0)(new StructType().add(input(orderIndex).copy(name = "high")))

  /** `rows` in arrival order, with the new highest ORDER BY value (Row(value)); counts the
   *  rows below `high`, the highest of earlier micro-batches. */
  def sorted(rows: Iterator[Row], high: Option[Row]): (Array[Row], Option[Row]) = {
    val batch = rows.toArray.sorted(ordering)
    if (orderIndex < 0 || batch.isEmpty) return (batch, high)
    val values = batch.iterator.map(_.get(orderIndex)).filter(_ != null).toArray
    val before = high.map(_.get(0)).orNull
    if (before != null) {
      val late = values.count(v => compare(v, before) < 0)
      if (late > 0) counters.outOfOrder.add(late)
    }
    val highest = (values.iterator ++ Option(before)).reduceOption((a, b) =>
      if (compare(a, b) >= 0) a else b)
    (batch, highest.map(Row(_)).orElse(high))
  }
}
