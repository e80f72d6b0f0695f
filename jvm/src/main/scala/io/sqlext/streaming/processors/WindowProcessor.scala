package io.sqlext.streaming.processors

import io.sqlext.Contract
import io.sqlext.replay.{ArrivalOrder, ReplayLayout}
import io.sqlext.streaming.catalog.StreamCounters
import io.sqlext.streaming.input.{ExternalRows, FileEnds, FiringPartials, MicroBatchOrder,
  PackedTuples}
import io.sqlext.window._
import org.apache.spark.internal.Logging
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable.ArrayBuffer

/**
 * One partition of a TUMBLING or SLIDING window under `transformWithState`, driving the same
 * state machines as batch (semantics.md sections 2-5). Per micro-batch the partition's saved
 * state is put back into a fresh machine, the batch's tuples (packed per map task and read in
 * place, in Spark's internal form: [[PackedTuples]]) go in in arrival order (ORDER BY, then the
 * source's order: [[MicroBatchOrder]]), and the state is saved again: the open tuples packed
 * in one value state ([[PackedTuples.hold]]; older checkpoints kept a Row each in a list state,
 * read once), the policy state (window number, initial-full flag, trigger counter, delta
 * reference, TIME stamps and next tick) in another. Both live in Spark's checkpointed
 * state store, so a restart resumes the window where it was (section 8).
 *
 * TIME policies read the wall clock: the batch's processing time, and processing-time timers at
 * the next tick fire a window with no new tuples, also a tick that fell due while the query was
 * down. Ticks are aligned to multiples of the period since the epoch.
 */
class WindowProcessor(spec: WindowSpec, input: StructType, metaNames: Seq[String],
    counters: StreamCounters, packing: PackedTuples)
    extends StatefulProcessor[Row, Row, Row] with Logging {

  /** The partition's tuples, packed as a micro-batch's are ([[PackedTuples.hold]]): one value
   *  per partition, read and written whole. */
  @transient private var held: ValueState[Array[Byte]] = _
  /** The tuples as checkpoints written before `held` keep them (one Row each), read once. */
  @transient private var tuples: ListState[Row] = _
  @transient private var policy: ValueState[Row] = _
  /** Whether the partition being processed had held tuples, in either form, when loaded. */
  @transient private var hadHeld = false
  @transient private var hadRows = false

  private val order = MicroBatchOrder.ofInternalRows(spec, input, counters)
  private val arrivalKeys = ArrivalOrder.longKeys(spec, input)
  private val emitter = WindowProcessor.emitterFor(spec, input, metaNames)
  private val rows = new ExternalRows(input)
  private val unwindowable = WindowProcessor.unwindowable(input)
  private val tickPeriod: Long = spec.tickPeriod
  /** PARTITION EVICTION AGE(s): a partition not inserted into for more than s seconds goes,
   *  in the batch engine's whole seconds (the rule's one home, [[WindowSpec]]). */
  private val ageLimitMs: Long = WindowProcessor.ageMs(spec)

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    held = getHandle.getValueState[Array[Byte]]("held", Encoders.BINARY, TTLConfig.NONE)
    tuples = getHandle.getListState[Row]("tuples", Encoders.row(input), TTLConfig.NONE)
    policy = getHandle.getValueState[Row]("policy", Encoders.row(WindowProcessor.PolicySchema),
      TTLConfig.NONE)
    order.init(getHandle)
  }

  override def handleInputRows(key: Row, packs: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val nowMs = timers.getCurrentProcessingTimeInMs()
    val now = nowMs * 1000L
    val (window, out, touched) = load(key, now)
    val emit = emitter(out)
    if (aged(window, key, touched, nowMs)) evict(key, window, emit)
    if (spec.timeBased) window.advanceClock(now)(emit)
    var skipped = 0L
    var inserted = false
    val files = new FileEnds(input)
    val (tuples, inOrder) = packing.unpack(packs, arrivalKeys)
    order.sorted(tuples, inOrder).foreach { row =>
      if (unwindowable(row)) skipped += 1
      else {
        if (files.endsBefore(row)) window.punctuate(now)(emit)
        window.insert(key, row, now)(emit)
        inserted = true
      }
    }
    if (files.endsAtLast) window.punctuate(now)(emit)
    WindowProcessor.notWindowed(spec, skipped).foreach(logWarning(_))
    save(key, window, if (inserted) nowMs else touched)
    if (inserted && ageLimitMs >= 0) getHandle.registerTimer(nowMs + ageLimitMs + 1)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = {
    val nowMs = timers.getCurrentProcessingTimeInMs()
    if (!policy.exists()) return Iterator.empty
    val (window, out, touched) = load(key, nowMs * 1000L)
    val emit = emitter(out)
    if (aged(window, key, touched, nowMs)) evict(key, window, emit)
    if (spec.timeBased) window.advanceClock(nowMs * 1000L)(emit)
    save(key, window, touched)
    out.iterator
  }

  /** AGE eviction is due: the partition holds tuples and saw no insert for more than AGE. */
  private def aged(window: CheckpointedWindow[Row, InternalRow], key: Row, touched: Long,
      nowMs: Long): Boolean =
    ageLimitMs >= 0 && touched != Long.MinValue && nowMs > touched + ageLimitMs &&
      window.save(key).tuples.nonEmpty

  /** The partition's tuples leave: fired as EVICTED with EMIT EVICTED, else counted and logged.
   *  Its window number stays, as the batch engine keeps it. */
  private def evict(key: Row, window: CheckpointedWindow[Row, InternalRow],
      emit: Firing[Row, InternalRow] => Unit): Unit = {
    val state = window.save(key)
    if (spec.emitEvicted) emit(Firing(key, state.firings, state.tuples, Firing.Evicted))
    else logWarning(s"sql_ext window ${spec.policyText}: PARTITION EVICTION dropped " +
      s"${state.tuples.length} tuples of an aged partition (EMIT EVICTED would fire them)")
    window.discard(key)
    window.restore(key, PartitionState(IndexedSeq.empty,
      state.firings + (if (spec.emitEvicted) 1 else 0)))
  }

  /** A state machine holding this partition as the previous micro-batch left it, an output
   *  buffer, and the wall clock (ms) of the partition's last insert (Long.MinValue: none). */
  private def load(key: Row, now: Long)
      : (CheckpointedWindow[Row, InternalRow], ArrayBuffer[Row], Long) = {
    val saved = if (policy.exists()) Some(policy.get()) else None
    val nextTick = saved.map(_.getLong(4)).filter(_ != Long.MaxValue)
    // A new partition's first tick is the next multiple of the period after now.
    val window = WindowProcessor.newWindow(spec, input,
      WindowProcessor.tickOrigin(tickPeriod, nextTick, now), eviction = None)
    hadHeld = false
    hadRows = false
    saved.foreach { p =>
      hadHeld = held.exists()
      val restored = if (hadHeld) packing.unhold(held.get())
        else tuples.get().map(rows.internal).toIndexedSeq
      hadRows = !hadHeld && restored.nonEmpty
      window.restore(key, PartitionState(restored, p.getLong(0), p.getBoolean(1), p.getLong(2),
        if (p.isNullAt(3)) None else Some(p.getDouble(3)), p.getSeq[Long](5).toIndexedSeq))
    }
    (window, ArrayBuffer.empty[Row], saved.map(_.getLong(6)).getOrElse(Long.MinValue))
  }

  private def save(key: Row, window: CheckpointedWindow[Row, InternalRow], touchedMs: Long): Unit = {
    val state = window.save(key)
    if (state.tuples.nonEmpty) held.update(packing.hold(state.tuples))
    else if (hadHeld) held.clear()
    if (hadRows) tuples.clear()
    policy.update(WindowProcessor.policyRow(state.firings, state.full, state.counter,
      state.reference, window.nextTickAt, state.stamps, touchedMs))
    if (tickPeriod > 0 && state.tuples.nonEmpty && window.nextTickAt != Long.MaxValue) {
      getHandle.registerTimer(WindowProcessor.tickTimerMs(window.nextTickAt))
    }
  }
}

object WindowProcessor {

  /** What a firing hands on, into an output buffer: with partial aggregates one row (its key,
   *  its columns `metaNames`, the partials), else every tuple (as a Row) followed by its
   *  columns. The key is the firing's: the partition columns' values, in the spec's order. */
  def emitterFor(spec: WindowSpec, input: StructType, metaNames: Seq[String])
      : ArrayBuffer[Row] => Firing[Row, InternalRow] => Unit = {
    val orderIndex = input.fieldNames.indexOf(WindowSpec.OrderColumn)
    val orderValue = if (orderIndex < 0) null
      else new ExternalRows.OfValue(input(orderIndex).dataType)
    def order(t: InternalRow) = if (orderIndex < 0 || t.isNullAt(orderIndex)) null
      else orderValue.external(t.get(orderIndex, input(orderIndex).dataType))
    def meta(f: Firing[Row, InternalRow]) =
      metaValues(metaNames, f.windowId, f.event, order(f.tuples.head), order(f.tuples.last))
    if (FiringPartials.enabled(spec)) {
      val partials = new FiringPartials(spec, input)
      val keyed = spec.partitionColumns.nonEmpty
      out => f => out += Row.fromSeq((if (keyed) f.key.toSeq else Nil) ++ meta(f) ++
        partials.over(f.tuples))
    } else {
      val rows = new ExternalRows(input)
      out => f => {
        val values = meta(f)
        f.tuples.foreach(t => out += Row.fromSeq(rows.external(t).toSeq ++ values))
      }
    }
  }

  /** Tuples a TUMBLING or SLIDING window cannot take: a DELTA value is NULL. */
  def unwindowable(input: StructType): InternalRow => Boolean = {
    val columns = Seq(WindowSpec.DeltaColumn, WindowSpec.TriggerDeltaColumn)
      .map(c => input.fieldNames.indexOf(c)).filter(_ >= 0).toArray
    row => columns.exists(row.isNullAt)
  }

  /** PARTITION EVICTION AGE in milliseconds of the wall clock, -1 without it. */
  def ageMs(spec: WindowSpec): Long = spec.partitionEvictionPolicy match {
    case Some(PartitionEvictionPolicy.Age(seconds)) => seconds * 1000L
    case _ => -1L
  }

  /** The processing-time timer (ms) at which a tick due at `nextTickAt` (µs) fires. */
  def tickTimerMs(nextTickAt: Long): Long = Math.floorDiv(nextTickAt + 999L, 1000L)

  /** The warning for `skipped` rows of a micro-batch a DELTA window could not window. */
  def notWindowed(spec: WindowSpec, skipped: Long): Option[String] =
    Option.when(skipped > 0)(s"sql_ext window ${spec.policyText}: $skipped rows were not " +
      "windowed because their DELTA value is NULL")

  /** The tick before the next one: from the saved next tick, else (a new window) the last
   *  multiple of the period at or before now. */
  def tickOrigin(period: Long, savedNextTick: Option[Long], now: Long): Long =
    if (period == 0) 0L
    else savedNextTick.map(_ - period).getOrElse(Math.floorDiv(now, period) * period)

  /** The batch engine's state machine for the spec's policy ([[Windows]]), over tuples in
   *  Spark's internal form, read as batch replay reads them ([[ReplayLayout]]). */
  def newWindow(spec: WindowSpec, input: StructType, origin: Long,
      eviction: Option[PartitionEvictionPolicy]): CheckpointedWindow[Row, InternalRow] = {
    def isTimestamp(column: String) = input.find(_.name == column).map(_.dataType)
      .exists(t => t == TimestampType || t == TimestampNTZType)
    val values = DeltaValues[InternalRow](reader(input, WindowSpec.DeltaColumn),
      isTimestamp(WindowSpec.DeltaColumn), reader(input, WindowSpec.TriggerDeltaColumn),
      isTimestamp(WindowSpec.TriggerDeltaColumn))
    // Orders the partitions one event fires (punctuations, ticks, evictions): the output is
    // a set of rows, so any fixed order does.
    Windows.of[Row, InternalRow](spec, values, Ordering.by[Row, String](_.toString), origin,
      eviction)
  }

  /** A firing's column values: its window number, event, and the ORDER BY values (as a Row
   *  holds them) of its first and last tuple, read only when asked for. */
  def metaValues(metaNames: Seq[String], windowId: Long, event: String, first: => Any,
      last: => Any): Seq[Any] =
    metaNames.map {
      case WindowSpec.FireColumn | Contract.WindowIdColumn => windowId
      case Contract.PaneStartColumn => first
      case Contract.PaneEndColumn => last
      case Contract.PaneTimingColumn => "ON_TIME"
      case Contract.PaneIndexColumn => 0L
      case Contract.WindowEventColumn => event
    }

  val PolicySchema: StructType = new StructType()
    .add("firings", LongType, nullable = false)
    .add("full", BooleanType, nullable = false)
    .add("counter", LongType, nullable = false)
    .add("reference", DoubleType, nullable = true)
    .add("next_tick", LongType, nullable = false)
    .add("stamps", ArrayType(LongType, containsNull = false), nullable = false)
    .add("touched", LongType, nullable = false) // wall clock (ms) of the last insertion

  /** A row of PolicySchema (every writer of the "policy" state goes through here). */
  def policyRow(firings: Long, full: Boolean, counter: Long, reference: Option[Double],
      nextTick: Long, stamps: Seq[Long], touchedMs: Long): Row =
    Row(firings, full, counter, reference.orNull, nextTick, stamps, touchedMs)

  /** A DELTA column as a double (numbers as they are, timestamps in microseconds), as batch
   *  replay reads it; the column's type resolved once. */
  def reader(input: StructType, column: String): InternalRow => Double =
    input.fieldNames.indexOf(column) match {
      case -1 => _ => 0.0
      case i => input(i).dataType match { // resolved once: read for every tuple
        case LongType | TimestampType | TimestampNTZType => row => row.getLong(i).toDouble
        case DoubleType => row => row.getDouble(i)
        case dataType => row => ReplayLayout.numeric(row, i, dataType)
      }
    }
}
