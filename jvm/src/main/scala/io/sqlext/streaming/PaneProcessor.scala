package io.sqlext.streaming

import io.sqlext.window.{PaneSpec, WindowSpec}
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable.ArrayBuffer

/**
 * TIME_INTERVAL panes of one partition key under `transformWithState` (semantics.md section 6).
 * Spark's watermark is the SPL watermark minus the discard age (architecture.md section 3), less
 * 1 ms, so Spark drops exactly the tuples SPL drops (to the millisecond). Each call first lets the panes see the batch's
 * watermark (complete, trigger updated partitions, close), then inserts the batch's tuples: a
 * watermark computed after micro-batch b acts before the tuples of batch b + 1, as in SPL.
 * Timers only wake keys that receive no tuples. State: one map entry per open pane.
 */
class PaneProcessor(spec: WindowSpec, input: StructType, metaNames: Seq[String])
    extends StatefulProcessor[Row, Row, Row] {

  @transient private var panes: MapState[Long, Row] = _
  @transient private var seen: ValueState[Long] = _

  private val geometry = PaneSpec(math.round(spec.duration * 1e6), math.round(spec.period * 1e6),
    math.round(spec.discard * 1e6), math.round(spec.offset * 1e6))
  private val eventIndex = input.fieldIndex(WindowSpec.EventTimeColumn)

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    panes = getHandle.getMapState[Long, Row]("panes", Encoders.scalaLong,
      Encoders.row(PaneProcessor.paneSchema(input)), TTLConfig.NONE)
    seen = getHandle.getValueState[Long]("watermark", Encoders.scalaLong, TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val out = ArrayBuffer.empty[Row]
    val watermarkMs = timers.getCurrentWatermarkInMs()
    advance(watermarkMs, out)
    rows.foreach { row =>
      val time = PaneProcessor.micros(row.get(eventIndex))
      geometry.panesOf(time).foreach { n =>
        val pane = Option(panes.getValue(n))
        if (pane.isEmpty) registerTimers(n, watermarkMs)
        val complete = pane.exists(_.getBoolean(0))
        // A tuple for a pane that is already complete (or whose end the watermark passed)
        // re-fires it at the next advancing watermark.
        if (complete || splWatermark(watermarkMs) >= geometry.end(n)) {
          getHandle.registerTimer(watermarkMs + 1) // a timer fires once watermark >= its time
        }
        val tuples = pane.map(_.getSeq[Row](3)).getOrElse(Seq.empty) :+ row
        panes.updateValue(n, Row(complete, true, pane.map(_.getLong(2)).getOrElse(0L), tuples))
      }
    }
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = {
    val out = ArrayBuffer.empty[Row]
    advance(timers.getCurrentWatermarkInMs(), out)
    out.iterator
  }

  /** SPL's watermark: Spark's runs 1 ms below W - discard, because Spark drops tuples at or
   *  below its watermark and SPL only those strictly below W - discard. */
  private def splWatermark(sparkMs: Long): Long =
    (sparkMs + PaneProcessor.BoundaryMs) * 1000L + geometry.discard

  /** Wake-ups for completion (W >= end) and closing (W >= end + discard): a timer fires once
   *  Spark's watermark reaches its time, and W = Spark's watermark + discard. */
  private def registerTimers(n: Long, watermarkMs: Long): Unit = {
    def at(splMicros: Long): Long = math.max(
      Math.floorDiv(splMicros - geometry.discard + 999L, 1000L) - PaneProcessor.BoundaryMs,
      watermarkMs + 1)
    getHandle.registerTimer(at(geometry.end(n)))
    getHandle.registerTimer(at(geometry.end(n) + geometry.discard))
  }

  /** One watermark, once: panes complete, trigger their fresh partition, close. */
  private def advance(watermarkMs: Long, out: ArrayBuffer[Row]): Unit = {
    if (seen.exists() && seen.get() >= watermarkMs) return
    seen.update(watermarkMs)
    val w = splWatermark(watermarkMs)
    val open = panes.iterator().toSeq.sortBy(_._1)
    open.foreach { case (n, pane) =>
      val complete = pane.getBoolean(0) || w >= geometry.end(n)
      var fresh = pane.getBoolean(1)
      var firings = pane.getLong(2)
      val tuples = pane.getSeq[Row](3)
      if (complete && fresh) {
        tuples.foreach(t => out += Row.fromSeq(t.toSeq ++ meta(n, firings)))
        firings += 1
        fresh = false
      }
      if (complete && w - geometry.discard >= geometry.end(n)) panes.removeKey(n)
      else panes.updateValue(n, Row(complete, fresh, firings, tuples))
    }
  }

  private def meta(n: Long, index: Long): Seq[Any] = metaNames.map {
    case WindowSpec.FireColumn | "__sx_wid" => n
    case "__sx_pstart" => PaneProcessor.timestamp(geometry.start(n))
    case "__sx_pend" => PaneProcessor.timestamp(geometry.end(n))
    case "__sx_timing" => if (index == 0) "ON_TIME" else "LATE"
    case "__sx_pidx" => index
    case "__sx_event" => "TRIGGER"
  }
}

object PaneProcessor {
  val BoundaryMs = 1L

  def paneSchema(input: StructType): StructType = new StructType()
    .add("complete", BooleanType, nullable = false)
    .add("fresh", BooleanType, nullable = false)
    .add("firings", LongType, nullable = false)
    .add("tuples", ArrayType(input, containsNull = false), nullable = false)

  def micros(value: Any): Long = value match {
    case t: java.sql.Timestamp => DateTimeUtils.fromJavaTimestamp(t)
    case i: java.time.Instant => DateTimeUtils.instantToMicros(i)
    case other => throw new IllegalArgumentException(
      s"a streaming TIME_INTERVAL needs a TIMESTAMP event time, got $other")
  }

  def timestamp(micros: Long): java.sql.Timestamp = DateTimeUtils.toJavaTimestamp(micros)
}
