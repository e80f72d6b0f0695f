package io.sqlext.execution

import io.sqlext.window.{AggregateLayout, AggregateKind, CompactTuple, Firing, SlidingWindow,
  StoreListener, TwoStackAggregate, WindowSpec, Windows}
import io.sqlext.optimizer.PartialAggregates
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
    kinds: Seq[String],
    aggregateInputs: Seq[Expression],
    outputTypes: Seq[DataType],
    metrics: ReplayMetrics) {

  private type Window = SlidingWindow[UnsafeRow, CompactTuple]

  private val evaluate = UnsafeProjection.create(aggregateInputs, layout.input)
  private val inputTypes = aggregateInputs.map(_.dataType).toArray
  private val integral = inputTypes.map(PartialAggregates.isIntegral)
  private val anyIntegral = integral.contains(true)
  private val aggregateLayout = new AggregateLayout(kinds.map(AggregateKind(_)).toArray,
    integral)
  private val keyOf = layout.keyProjection
  private val keyTypes = layout.partitionAttrs.map(_.dataType)
  private val project = UnsafeProjection.create(
    (keyTypes ++ layout.meta.map(_.dataType) ++ outputTypes).toArray)
  private val pending = mutable.Queue.empty[InternalRow]
  private val aggregates = mutable.HashMap.empty[UnsafeRow, TwoStackAggregate]

  private val listener = new StoreListener[UnsafeRow, CompactTuple] {
    private def of(key: UnsafeRow) =
      aggregates.getOrElseUpdate(key, new TwoStackAggregate(aggregateLayout))
    override def appended(key: UnsafeRow, t: CompactTuple): Unit = of(key).push(t)
    override def removedOldest(key: UnsafeRow): Unit = of(key).popOldest()
    override def filtered(key: UnsafeRow, remaining: Iterable[CompactTuple]): Unit =
      of(key).rebuild(remaining)
    override def removed(key: UnsafeRow): Unit = aggregates.remove(key)
  }

  private val emit: Firing[UnsafeRow, CompactTuple] => Unit = { f =>
    metrics.firings += 1
    val partial = if (f.event == Firing.Evicted) {
      f.tuples.foldLeft(aggregateLayout.empty)((p, t) => aggregateLayout.merge(p, aggregateLayout.of(t)))
    } else aggregates(f.key).current
    val values = new Array[Any](keyTypes.length + layout.meta.length + outputTypes.length)
    var i = 0
    keyTypes.zipWithIndex.foreach { case (t, k) =>
      values(i) = if (f.key.isNullAt(k)) null else f.key.get(k, t); i += 1 }
    layout.metaValues(f.windowId, f.event, f.paneIndex, f.tuples.head.arrival,
      f.tuples.last.arrival).foreach { v => values(i) = v; i += 1 }
    aggregateLayout.result(partial).zip(outputTypes).foreach { case (v, t) =>
      values(i) = v.map(AggregateReplay.convert(_, t)).orNull; i += 1 }
    pending.enqueue(project(new GenericInternalRow(values)).copy())
  }

  private def compact(row: InternalRow): CompactTuple = {
    val evaluated = evaluate(row)
    val values = new Array[Double](inputTypes.length)
    val longs = if (anyIntegral) new Array[Long](inputTypes.length) else null
    val nulls = new Array[Boolean](inputTypes.length)
    var i = 0
    while (i < inputTypes.length) {
      nulls(i) = evaluated.isNullAt(i)
      if (!nulls(i) && kinds(i) != "count") {
        if (integral(i)) longs(i) = AggregateReplay.integer(evaluated, i, inputTypes(i))
        else values(i) = ReplayLayout.numeric(evaluated, i, inputTypes(i))
      }
      i += 1
    }
    CompactTuple(values, nulls, layout.arrivalValue(row),
      if (layout.deltaOrdinal >= 0) layout.deltaValue(row) else 0.0,
      if (layout.triggerOrdinal >= 0) layout.triggerValue(row) else 0.0, longs)
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
      aggregates.clear()
    }

    private var peak = 0

    private def finish(): Unit = {
      endOfKey()
      finished = true
      metrics.sawPartitions(if (spec.replaysGlobally) peak else 1)
    }
  }
}

object AggregateReplay {
  def integer(row: InternalRow, i: Int, dataType: DataType): Long = dataType match {
    case ByteType => row.getByte(i).toLong
    case ShortType => row.getShort(i).toLong
    case IntegerType => row.getInt(i).toLong
    case LongType => row.getLong(i)
  }

  /** Results (a Long or a Double) take the type Spark's own aggregate would have. */
  def convert(value: Any, dataType: DataType): Any = (value, dataType) match {
    case (v: Long, LongType) => v
    case (v: Long, IntegerType) => v.toInt
    case (v: Long, ShortType) => v.toShort
    case (v: Long, ByteType) => v.toByte
    case (v: Long, _) => v.toDouble
    case (v: Double, LongType) => v.toLong
    case (v: Double, IntegerType) => v.toInt
    case (v: Double, ShortType) => v.toShort
    case (v: Double, ByteType) => v.toByte
    case (v: Double, FloatType) => v.toFloat
    case (v, _) => v
  }
}
