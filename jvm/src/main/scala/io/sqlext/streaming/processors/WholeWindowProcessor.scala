package io.sqlext.streaming.processors

import io.sqlext.replay.ArrivalOrder
import io.sqlext.streaming.catalog.StreamCounters
import io.sqlext.streaming.input.{ExternalRows, FileEnds, MicroBatchOrder, PackedTuples}
import io.sqlext.window._
import org.apache.spark.internal.Logging
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * A TUMBLING or SLIDING window whose events act across partitions, run as ONE state machine
 * over all partitions (one grouping key), as the batch engine replays it globally:
 *  - PUNCT(expr): a marker row flushes every partition (PUNCT() with PARTITION EVICTION
 *    COUNT or TUPLES: the end of each input file does; Spark reads a file whole within one
 *    micro-batch, so a file ends where the next begins and at the end of its micro-batch);
 *  - PARTITION EVICTION COUNT(n) and TUPLES(n): victims are the least recently inserted-into
 *    partitions of the whole window (semantics.md section 5).
 * Tuples go in in arrival order ([[MicroBatchOrder]]), in Spark's internal form as packed
 * ([[PackedTuples]]). TIME policies tick by the wall clock, as in [[WindowProcessor]].
 *
 * State: `partitions`, one entry per partition in the window (tuples, policy state, place in
 * the recency order), read whole every micro-batch: partition eviction bounds it. `numbers`,
 * the window number of a key that left the window, read only when the key comes back. `tick`,
 * the next TIME tick.
 */
class WholeWindowProcessor(spec: WindowSpec, input: StructType, partitionSchema: StructType,
    metaNames: Seq[String], counters: StreamCounters, packing: PackedTuples)
    extends StatefulProcessor[Row, Row, Row] with Logging {

  @transient private var partitions: MapState[Row, Row] = _
  @transient private var numbers: MapState[Row, Long] = _
  @transient private var tick: ValueState[Long] = _

  private val order = MicroBatchOrder.ofInternalRows(spec, input, counters)
  private val arrivalKeys = ArrivalOrder.longKeys(spec, input)
  private val markerIndex = input.fieldNames.indexOf(WindowSpec.PunctColumn)
  private val unwindowable = WindowProcessor.unwindowable(input)
  private val tickPeriod = spec.tickPeriod
  private val emitter = WindowProcessor.emitterFor(spec, input, metaNames)
  private val rows = new ExternalRows(input)
  /** Unpartitioned: the one partition's key is the constant grouping key. */
  private val keyColumns = partitionSchema.fieldNames.filter(input.fieldNames.contains).toSeq
  private val keyRows = new ExternalRows(StructType(keyColumns.map(input(_))))
  @transient private lazy val keyProjection = {
    val attributes = DataTypeUtils.toAttributes(input)
    UnsafeProjection.create(keyColumns.map(c => attributes(input.fieldIndex(c))), attributes)
  }

  /** The key of a tuple's partition, one Row per key (the window's keys are compared by
   *  reference on its hot path). */
  private def keyOf(row: InternalRow, keys: java.util.HashMap[UnsafeRow, Row]): Row =
    if (keyColumns.isEmpty) WholeWindowProcessor.NoKey
    else {
      val key = keyProjection(row)
      var found = keys.get(key)
      if (found == null) {
        found = keyRows.external(key)
        keys.put(key.copy(), found)
      }
      found
    }

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    partitions = getHandle.getMapState[Row, Row]("partitions", Encoders.row(partitionSchema),
      Encoders.row(WholeWindowProcessor.partitionState(input)), TTLConfig.NONE)
    numbers = getHandle.getMapState[Row, Long]("numbers", Encoders.row(partitionSchema),
      Encoders.scalaLong, TTLConfig.NONE)
    tick = getHandle.getValueState[Long]("tick", Encoders.scalaLong, TTLConfig.NONE)
    order.init(getHandle)
  }

  override def handleInputRows(key: Row, packs: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val now = timers.getCurrentProcessingTimeInMs() * 1000L
    val (window, keys) = load(now)
    val out = ArrayBuffer.empty[Row]
    val emit = emitter(out)
    if (spec.timeBased) window.advanceClock(now)(emit)
    val files = new FileEnds(input)
    var skipped = 0L
    val known = new java.util.HashMap[UnsafeRow, Row]()
    if (keyColumns.nonEmpty) keys.foreach(k => known.put(keyRows.internal(k), k))
    val (tuples, inOrder) = packing.unpack(packs, arrivalKeys)
    order.sorted(tuples, inOrder).foreach { row =>
      if (markerIndex >= 0 && !row.isNullAt(markerIndex) && row.getBoolean(markerIndex)) {
        window.punctuate(now)(emit)
      } else if (unwindowable(row)) skipped += 1
      else {
        if (files.endsBefore(row)) window.punctuate(now)(emit)
        val k = keyOf(row, known)
        if (keys.add(k) && numbers.containsKey(k)) {
          window.restore(k, PartitionState(IndexedSeq.empty, numbers.getValue(k)))
        }
        window.insert(k, row, now)(emit)
      }
    }
    if (files.endsAtLast) window.punctuate(now)(emit)
    WindowProcessor.notWindowed(spec, skipped).foreach(logWarning(_))
    save(window, keys)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = {
    val now = timers.getCurrentProcessingTimeInMs() * 1000L
    val (window, keys) = load(now)
    val out = ArrayBuffer.empty[Row]
    window.advanceClock(now)(emitter(out))
    save(window, keys)
    out.iterator
  }

  /** The window as the previous micro-batch left it, and the keys it was given. */
  private def load(now: Long): (CheckpointedWindow[Row, InternalRow], mutable.LinkedHashSet[Row]) = {
    val savedTick = if (tick.exists()) Some(tick.get()) else None
    val window = WindowProcessor.newWindow(spec, input,
      WindowProcessor.tickOrigin(tickPeriod, savedTick.filter(_ != Long.MaxValue), now),
      spec.partitionEvictionPolicy)
    val keys = mutable.LinkedHashSet.empty[Row]
    // Least recently inserted into first: restoring rebuilds the recency order.
    partitions.iterator().toSeq.sortBy(_._2.getLong(6)).foreach { case (k, p) =>
      window.restore(k, PartitionState(p.getSeq[Row](0).map(rows.internal).toIndexedSeq,
        p.getLong(1),
        p.getBoolean(2), p.getLong(3), if (p.isNullAt(4)) None else Some(p.getDouble(4)),
        p.getSeq[Long](5).toIndexedSeq, if (p.isNullAt(7)) None else Some(p.getLong(7))))
      keys += k
    }
    (window, keys)
  }

  /** Keeps every key the window was given: in `partitions` while the window holds it, else
   *  its window number in `numbers`. */
  private def save(window: CheckpointedWindow[Row, InternalRow], keys: Iterable[Row]): Unit = {
    val rank = window.recencyOrder.zipWithIndex.toMap
    var holding = false
    keys.foreach { k =>
      val state = window.save(k)
      val keep = window.holds(k) || state.full || state.counter > 0 ||
        state.reference.isDefined || state.stamps.nonEmpty
      if (keep) {
        holding = holding || state.tuples.nonEmpty
        partitions.updateValue(k, Row(state.tuples.map(rows.external), state.firings, state.full, state.counter,
          state.reference.orNull, state.stamps, rank.getOrElse(k, -1).toLong,
          state.lastInsert.orNull))
      } else {
        if (partitions.containsKey(k)) partitions.removeKey(k)
        if (state.firings > 0) numbers.updateValue(k, state.firings)
      }
    }
    if (window.evictedTuples > 0) logWarning(s"sql_ext window ${spec.policyText}: PARTITION " +
      s"EVICTION dropped ${window.evictedTuples} tuples of evicted partitions (EMIT EVICTED " +
      "would fire them)")
    if (tickPeriod > 0) {
      tick.update(window.nextTickAt)
      if (holding && window.nextTickAt != Long.MaxValue) {
        getHandle.registerTimer(WindowProcessor.tickTimerMs(window.nextTickAt))
      }
    }
  }
}

object WholeWindowProcessor {
  /** The one partition of an unpartitioned window. */
  private val NoKey = Row(0)

  def partitionState(input: StructType): StructType = new StructType()
    .add("tuples", ArrayType(input, containsNull = false), nullable = false)
    .add("firings", LongType, nullable = false)
    .add("full", BooleanType, nullable = false)
    .add("counter", LongType, nullable = false)
    .add("reference", DoubleType, nullable = true)
    .add("stamps", ArrayType(LongType, containsNull = false), nullable = false)
    .add("rank", LongType, nullable = false) // place in the recency order, -1: not in it
    .add("last_insert", LongType, nullable = true) // second of the last insertion
}
