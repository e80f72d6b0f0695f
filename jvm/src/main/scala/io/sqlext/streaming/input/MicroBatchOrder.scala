package io.sqlext.streaming.input

import io.sqlext.replay.ArrivalOrder
import io.sqlext.streaming.catalog.StreamCounters
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.streaming.{StatefulProcessorHandle, TTLConfig, ValueState}
import org.apache.spark.sql.types.StructType

import scala.reflect.ClassTag

/**
 * A micro-batch's tuples in arrival order ([[ArrivalOrder]], as batch replay orders them), and
 * the rows that order cannot place: with ORDER BY, a row whose value is below the highest one
 * an earlier micro-batch processed cannot go back in time. It is replayed where it arrives and
 * counted (SHOW STREAMS out_of_order_rows); the state keeps that highest value (as a Row).
 * Tuples are Rows ([[MicroBatchOrder.ofRows]]) or in Spark's internal form
 * ([[MicroBatchOrder.ofInternalRows]]); the order is the same.
 *
 * It also renumbers the tuples' arrival column (`sql_ext_arrival()`, a rank within one
 * micro-batch's scan) as `batch id << 32 | place in this key's micro-batch`: the order the
 * window took them in, comparable across micro-batches, so aggregates that follow arrival order
 * (FIRST, LAST, COLLECT_LIST over a window's tuples) see earlier micro-batches first. A replayed
 * micro-batch has the same id and order, so the same numbers.
 */
final class MicroBatchOrder[T: ClassTag] private (spec: WindowSpec, input: StructType,
    counters: StreamCounters, form: MicroBatchOrder.Form[T]) extends Serializable {
  private val orderIndex = input.fieldNames.indexOf(WindowSpec.OrderColumn)
  private val seqIndex = input.fieldNames.indexOf(WindowSpec.SeqColumn)

  /** The highest ORDER BY value processed (Row(value)), in the processor's state; null
   *  without ORDER BY. */
  @transient private var high: ValueState[Row] = _
  @transient private var handle: StatefulProcessorHandle = _

  /** Registers its state with the processor's handle (from the processor's init). */
  def init(handle: StatefulProcessorHandle): Unit = {
    this.handle = handle
    if (orderIndex >= 0) {
      val schema = new StructType().add(input(orderIndex).copy(name = "high"))
      high = handle.getValueState[Row]("order_high", Encoders.row(schema), TTLConfig.NONE)
    }
  }

  /** `rows` in arrival order (`inOrder`: they are, [[PackedTuples]] sorted them), their arrival
   *  column renumbered; counts the rows below the highest ORDER BY value of earlier
   *  micro-batches and keeps the new highest. */
  def sorted(rows: Array[T], inOrder: Boolean = false): Array[T] = {
    val batch = if (inOrder) rows else form.sort(rows)
    renumber(batch)
    if (orderIndex < 0 || batch.isEmpty) return batch
    val before = if (high.exists()) form.fromState(high.get().get(0)) else null
    var highest = before
    var late = 0L
    batch.foreach { row =>
      val value = form.orderValue(row, orderIndex)
      if (value != null) {
        if (before != null && form.compare(value, before) < 0) late += 1
        if (highest == null || form.compare(value, highest) > 0) highest = value
      }
    }
    if (late > 0) counters.outOfOrder.add(late)
    if (highest != null && (highest.asInstanceOf[AnyRef] ne before.asInstanceOf[AnyRef])) {
      high.update(Row(form.toState(highest)))
    }
    batch
  }

  private def renumber(batch: Array[T]): Unit =
    MicroBatchOrder.renumber(batch, form, seqIndex, handle)
}

object MicroBatchOrder {
  /** The arrival column of `batch` (in arrival order) numbered `batch id << 32 | place`. */
  private def renumber[T](batch: Array[T], form: Form[T], seqIndex: Int,
      handle: StatefulProcessorHandle): Unit = if (seqIndex >= 0 && batch.nonEmpty) {
    val base = handle.getQueryInfo().getBatchId << 32
    var i = 0
    while (i < batch.length) {
      batch(i) = form.withArrival(batch(i), seqIndex, base + i)
      i += 1
    }
  }

  /** For panes: a key's tuples of one micro-batch in arrival order, their arrival column
   *  renumbered as a window's are. Panes keep no ORDER BY bookkeeping: event time places their
   *  tuples. Built once per processor (the ordering is made here, not per key). */
  final class PaneNumbering(spec: WindowSpec, input: StructType) extends Serializable {
    private val seqIndex = input.fieldNames.indexOf(WindowSpec.SeqColumn)
    private val form = rowForm(spec, input)

    def apply(rows: Array[Row], handle: StatefulProcessorHandle): Array[Row] = {
      if (seqIndex >= 0) renumber(form.sort(rows), form, seqIndex, handle)
      rows
    }
  }

  /** How tuples of type T are read: their arrival order, and an ORDER BY value in the form
   *  `compare` reads, to and from the form the state keeps (a Row's). */
  sealed trait Form[T] extends Serializable {
    def ordering: Ordering[T]

    /** The tuples in arrival order (stable; in place or a new array). */
    def sort(tuples: Array[T]): Array[T] = {
      java.util.Arrays.sort(tuples.asInstanceOf[Array[AnyRef]],
        ordering.asInstanceOf[Ordering[AnyRef]]) // TimSort: linear on tuples in order
      tuples
    }

    def orderValue(tuple: T, ordinal: Int): Any
    /** `tuple` with the long `arrival` at `ordinal` (the same tuple, or a copy). */
    def withArrival(tuple: T, ordinal: Int, arrival: Long): T
    def compare(a: Any, b: Any): Int
    def toState(value: Any): Any
    def fromState(value: Any): Any
  }

  def ofRows(spec: WindowSpec, input: StructType, counters: StreamCounters)
      : MicroBatchOrder[Row] = new MicroBatchOrder[Row](spec, input, counters, rowForm(spec, input))

  private def rowForm(spec: WindowSpec, input: StructType): Form[Row] = {
    val orderIndex = input.fieldNames.indexOf(WindowSpec.OrderColumn)
    val values = if (orderIndex >= 0) ArrivalOrder.compareValues(input(orderIndex).dataType)
      else null
    new Form[Row] {
      override val ordering: Ordering[Row] = ArrivalOrder.rowOrdering(spec, input)
      override def orderValue(tuple: Row, ordinal: Int): Any = tuple.get(ordinal)
      override def withArrival(tuple: Row, ordinal: Int, arrival: Long): Row =
        Row.fromSeq(tuple.toSeq.updated(ordinal, arrival))
      override def compare(a: Any, b: Any): Int = values(a, b)
      override def toState(value: Any): Any = value
      override def fromState(value: Any): Any = value
    }
  }

  def ofInternalRows(spec: WindowSpec, input: StructType, counters: StreamCounters)
      : MicroBatchOrder[InternalRow] = {
    val orderIndex = input.fieldNames.indexOf(WindowSpec.OrderColumn)
    val dataType = if (orderIndex >= 0) input(orderIndex).dataType else null
    new MicroBatchOrder[InternalRow](spec, input, counters, new Form[InternalRow] {
      override val ordering: Ordering[InternalRow] = ArrivalOrder.internalOrdering(spec, input)
      @transient private lazy val values = TypeUtils.getInterpretedOrdering(dataType)
      private val stateValue = if (dataType != null) new ExternalRows.OfValue(dataType) else null
      override def orderValue(tuple: InternalRow, ordinal: Int): Any =
        if (tuple.isNullAt(ordinal)) null else tuple.get(ordinal, dataType)
      override def compare(a: Any, b: Any): Int = values.compare(a, b)
      override def withArrival(tuple: InternalRow, ordinal: Int, arrival: Long): InternalRow = {
        tuple.setLong(ordinal, arrival)
        tuple
      }
      override def toState(value: Any): Any = stateValue.external(value)
      override def fromState(value: Any): Any = stateValue.internal(value)
    })
  }
}
