package io.sqlext.replay

import io.sqlext.aggregate.{AggregateLayout, PartialAggregate}
import io.sqlext.window.{CompactTuple, Firing, SlidingWindow, StoreListener, TwoStackAggregate,
  WindowSpec, Windows}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._

import scala.collection.mutable

/**
 * The incremental path of a SLIDING window: tuples are kept compact (aggregate inputs, arrival,
 * DELTA values), each partition keeps a [[TwoStackAggregate]] in step with its buffer, and every
 * firing yields one row: partition columns, firing columns, aggregate values.
 */
final class AggregateReplay(
    spec: WindowSpec,
    layout: ReplayLayout,
    aggregates: Seq[PartialAggregate],
    aggregateInputs: Seq[Expression],
    metrics: ReplayMetrics) {

  private type Window = SlidingWindow[UnsafeRow, CompactTuple]

  private val evaluate = UnsafeProjection.create(aggregateInputs, layout.input)
  private val aggregateLayout = new AggregateLayout(aggregates.toArray)
  private val outputTypes = aggregateLayout.resultTypes
  private val keyOf = layout.keyProjection
  private val keyTypes = layout.partitionAttrs.map(_.dataType)
  private val project = UnsafeProjection.create(
    (keyTypes ++ layout.meta.map(_.dataType) ++ outputTypes).toArray)
  private val pending = mutable.Queue.empty[InternalRow]
  private val stacks = mutable.HashMap.empty[UnsafeRow, TwoStackAggregate]

  private val listener = new StoreListener[UnsafeRow, CompactTuple] {
    private def of(key: UnsafeRow) =
      stacks.getOrElseUpdate(key, new TwoStackAggregate(aggregateLayout))
    override def appended(key: UnsafeRow, t: CompactTuple): Unit = of(key).push(t)
    override def removedOldest(key: UnsafeRow): Unit = of(key).popOldest()
    override def filtered(key: UnsafeRow, remaining: Iterable[CompactTuple]): Unit =
      of(key).rebuild(remaining)
    override def removed(key: UnsafeRow): Unit = stacks.remove(key)
  }

  private val emit: Firing[UnsafeRow, CompactTuple] => Unit = { f =>
    metrics.firings += 1
    val partial = if (f.event == Firing.Evicted) TwoStackAggregate.over(aggregateLayout, f.tuples)
      else stacks(f.key).current
    val values = new Array[Any](keyTypes.length + layout.meta.length + outputTypes.length)
    var i = 0
    keyTypes.zipWithIndex.foreach { case (t, k) =>
      values(i) = if (f.key.isNullAt(k)) null else f.key.get(k, t); i += 1 }
    layout.metaValues(f.windowId, f.event, f.paneIndex, f.tuples.head.arrival,
      f.tuples.last.arrival).foreach { v => values(i) = v; i += 1 }
    aggregateLayout.results(partial).foreach { v => values(i) = v; i += 1 }
    pending.enqueue(project(new GenericInternalRow(values)).copy())
  }

  private def compact(row: InternalRow): CompactTuple = {
    val evaluated = evaluate(row)
    val inputs = new Array[Long](aggregates.length)
    val nulls = new Array[Boolean](aggregates.length)
    var i = 0
    while (i < inputs.length) {
      nulls(i) = evaluated.isNullAt(i)
      if (!nulls(i)) inputs(i) = aggregateLayout.aggregates(i).read(evaluated, i)
      i += 1
    }
    CompactTuple(inputs, nulls, layout.arrivalValue(row),
      if (layout.deltaOrdinal >= 0) layout.deltaValue(row) else 0.0,
      if (layout.triggerOrdinal >= 0) layout.triggerValue(row) else 0.0)
  }

  private def newWindow(firstRow: InternalRow): Window = {
    val w = Windows.sliding[UnsafeRow, CompactTuple](spec,
      layout.deltaValues[CompactTuple](_.evictValue, _.triggerValue), layout.keyOrdering,
      layout.clockStart(firstRow), layout.partitionEviction, copyOnTrigger = false)
    w.listen(listener)
    w
  }

  def run(input: Iterator[InternalRow]): Iterator[InternalRow] = new Iterator[InternalRow] {
    private var window: Window = _
    private var currentKey: UnsafeRow = _
    private var clockEnd = 0L
    private var finished = false

    override def hasNext: Boolean = {
      while (pending.isEmpty && !finished) {
        if (input.hasNext) consume(input.next()) else finish()
      }
      pending.nonEmpty
    }

    override def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException
      pending.dequeue()
    }

    private def consume(row: InternalRow): Unit = {
      if (layout.notWindowable(row)) { metrics.notWindowed += 1; return }
      val clock = layout.clock(row)
      val key = keyOf(row)
      if (spec.replaysGlobally) {
        if (window == null) { window = newWindow(row); clockEnd = layout.clockEnd(row) }
        window.insert(key.copy(), compact(row), clock)(emit)
        peak = math.max(peak, window.partitionCount)
        return
      }
      if (currentKey == null || key != currentKey) {
        endOfKey()
        currentKey = key.copy()
        window = newWindow(row)
        clockEnd = layout.clockEnd(row)
      }
      window.insert(currentKey, compact(row), clock)(emit)
    }

    private def endOfKey(): Unit = if (window != null) {
      if (spec.timeBased) window.advanceClock(clockEnd)(emit)
      metrics.evictedDropped += window.evictedTuples
      if (currentKey != null) window.discard(currentKey)
      stacks.clear()
    }

    private var peak = 0

    private def finish(): Unit = {
      endOfKey()
      finished = true
      metrics.sawPartitions(if (spec.replaysGlobally) peak else 1)
    }
  }
}
