package io.sqlext.streaming

import io.sqlext.window.{PaneSpec, WindowSpec}
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable.ArrayBuffer

/**
 * One TIME_INTERVAL pane of one partition under `transformWithState` (semantics.md section 6):
 * the grouping key is (partition keys, pane N), the tuples arrive already expanded to their
 * panes. State per key: the pane's flags and its tuples as a list state, appended once per
 * micro-batch (never rewritten).
 *
 * Spark's watermark is the SPL watermark minus the discard age (architecture.md section 3), less
 * 1 ms; the tuples SPL drops never get here ([[PaneInput.onTime]]). Each call first lets the
 * pane see the batch's watermark (complete, trigger if updated, close), then adds the batch's
 * tuples: a watermark computed after micro-batch b acts before the tuples of batch b + 1.
 * Timers wake panes that receive no tuples. A firing hands on every tuple of the pane
 * ([[PanePartialsProcessor]] keeps partials instead, when the aggregates allow).
 */
class PaneProcessor(
    spec: WindowSpec,
    input: StructType,
    metaNames: Seq[String],
    java8Time: Boolean) extends StatefulProcessor[Row, Row, Row] {

  @transient private var flags: ValueState[Row] = _
  @transient private var tuples: ListState[Row] = _

  private val geometry = PaneInput.geometry(spec)

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    flags = getHandle.getValueState[Row]("pane", Encoders.row(PaneProcessor.FlagSchema),
      TTLConfig.NONE)
    tuples = getHandle.getListState[Row]("tuples", Encoders.row(input), TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val n = key.getLong(key.length - 1)
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = advance(n, watermarkMs)
    val pane = if (flags.exists()) flags.get() else {
      registerTimers(n, watermarkMs)
      Row(false, false, 0L, watermarkMs) // created under this watermark: it acts from the next

    }
    tuples.appendList(rows.toArray)
    // A tuple for a pane that is complete (or whose end the watermark passed) re-fires it at
    // the next advancing watermark.
    val w = PaneProcessor.splWatermark(geometry, watermarkMs)
    if (pane.getBoolean(0) || w >= geometry.end(n)) {
      getHandle.registerTimer(watermarkMs + 1) // a timer fires once watermark >= its time
    }
    flags.update(Row(pane.getBoolean(0), true, pane.getLong(2), pane.getLong(3)))
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = advance(key.getLong(key.length - 1), timers.getCurrentWatermarkInMs())
    .iterator

  /** Wake-ups for completion (W >= end) and closing (W >= end + discard): a timer fires once
   *  Spark's watermark reaches its time, and W = Spark's watermark + discard. */
  private def registerTimers(n: Long, watermarkMs: Long): Unit = {
    def at(splMicros: Long): Long = PaneProcessor.timerAt(geometry, splMicros, watermarkMs)
    getHandle.registerTimer(at(geometry.end(n)))
    getHandle.registerTimer(at(geometry.end(n) + geometry.discard))
  }

  /** One watermark, once per pane: the pane completes, fires if updated, closes. */
  private def advance(n: Long, watermarkMs: Long): ArrayBuffer[Row] = {
    val out = ArrayBuffer.empty[Row]
    if (!flags.exists()) return out
    val pane = flags.get()
    if (pane.getLong(3) >= watermarkMs) return out
    val w = PaneProcessor.splWatermark(geometry, watermarkMs)
    val complete = pane.getBoolean(0) || w >= geometry.end(n)
    var fresh = pane.getBoolean(1)
    var firings = pane.getLong(2)
    if (complete && fresh) {
      val meta = metaValues(n, firings)
      tuples.get().foreach(t => out += Row.fromSeq(t.toSeq ++ meta))
      firings += 1
      fresh = false
    }
    if (complete && w - geometry.discard >= geometry.end(n)) {
      flags.clear()
      tuples.clear()
    } else flags.update(Row(complete, fresh, firings, watermarkMs))
    out
  }

  private def metaValues(n: Long, index: Long): Seq[Any] =
    PaneProcessor.metaValues(metaNames, geometry, n, index, java8Time)
}

object PaneProcessor {
  val BoundaryMs = 1L

  /** SPL's watermark (µs) under Spark's (ms): Spark's runs 1 ms below W - discard, because
   *  Spark drops tuples at or below its watermark and SPL only those strictly below. */
  def splWatermark(geometry: PaneSpec, sparkMs: Long): Long =
    (sparkMs + BoundaryMs) * 1000L + geometry.discard

  /** The event-time timer (Spark's watermark, ms) at which SPL's reaches `splMicros`, and at
   *  least the next one after `watermarkMs`: a timer fires once the watermark reaches it. */
  def timerAt(geometry: PaneSpec, splMicros: Long, watermarkMs: Long): Long = math.max(
    Math.floorDiv(splMicros - geometry.discard + 999L, 1000L) - BoundaryMs, watermarkMs + 1)

  /** The firing columns `metaNames` of firing `index` of pane N. */
  def metaValues(metaNames: Seq[String], geometry: PaneSpec, n: Long, index: Long,
      java8Time: Boolean): Seq[Any] = {
    // The external timestamp type the session's encoders expect.
    def timestamp(micros: Long): Any = if (java8Time) DateTimeUtils.microsToInstant(micros)
      else DateTimeUtils.toJavaTimestamp(micros)
    metaNames.map {
      case "__sx_wid" => n
      case "__sx_pstart" => timestamp(geometry.start(n))
      case "__sx_pend" => timestamp(geometry.end(n))
      case "__sx_timing" => if (index == 0) "ON_TIME" else "LATE"
      case "__sx_pidx" => index
      case "__sx_event" => "TRIGGER"
    }
  }

  val FlagSchema: StructType = new StructType()
    .add("complete", BooleanType, nullable = false)
    .add("fresh", BooleanType, nullable = false) // tuples arrived since the last firing
    .add("firings", LongType, nullable = false)
    .add("seen", LongType, nullable = false) // the last (Spark) watermark acted on
}
