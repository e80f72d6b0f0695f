package io.sqlext.streaming

import io.sqlext.window.{PaneRule, PaneSpec, PaneState, WindowSpec}
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * The TIME_INTERVAL panes of one partition key when every aggregate has partials (SUM, COUNT,
 * MIN, MAX, AVG): the firing rules of [[PaneProcessor]] (semantics.md section 6), but each pane
 * keeps its flags and running partials instead of its tuples. Its input is already combined per
 * map task and pane ([[PaneInput.combined]], late tuples dropped there): key columns, pane N,
 * partials, merged here into the pane's. A firing leaves as one row: key, pane N, firing
 * columns, partials (over all the pane's tuples, late ones included).
 *
 * State: a map from pane N to its [[PaneState]] and partials, and per key the last watermark
 * its panes saw and its one wake-up timer. Every call first lets all panes of the key take
 * [[PaneRule]]'s step under the batch's watermark once (complete, fire if updated, close: a
 * closed pane leaves the map), then adds the batch's tuples, then sets the timer at the
 * earliest of the panes' next changes ([[PaneRule.nextChange]]). Acting on all panes at once is
 * what per-pane timers would do: a pane changes only when the watermark reaches one of those.
 */
class PanePartialsProcessor(
    spec: WindowSpec,
    tuples: StructType, // the columns the partials read (names and types)
    metaNames: Seq[String],
    java8Time: Boolean) extends StatefulProcessor[Row, Row, Row] {

  @transient private var panes: MapState[Long, Row] = _
  @transient private var clock: ValueState[Row] = _

  private val partials = new FiringPartials(spec, tuples, Nil)
  private val geometry = PaneSpec.of(spec)
  private val rule = PaneRule(geometry)
  private val watermark = SplWatermark(geometry)
  /** An unpartitioned window's grouping key is a constant, not a column of the output. */
  private val keyColumns = spec.partitionColumns.length
  private val paneIndex = keyColumns // input rows: key columns, N, partials ([[PaneInput]])
  private val Flags = 3 // complete, fresh, firings; the partials follow

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    panes = getHandle.getMapState[Long, Row]("panes", Encoders.scalaLong,
      Encoders.row(PanePartialsProcessor.stateSchema(partials.schema)), TTLConfig.NONE)
    clock = getHandle.getValueState[Row]("clock", Encoders.row(PanePartialsProcessor.ClockSchema),
      TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = ArrayBuffer.empty[Row]
    val (open, wake) = advanceAll(key, watermarkMs, out)
    val touched = mutable.HashMap.empty[Long, Array[Any]]
    rows.foreach { row =>
      val n = row.getLong(paneIndex)
      // A new pane acts from the next watermark on (its creation is under this one).
      val pane = touched.getOrElseUpdate(n, open.get(n).map(_.toSeq.toArray)
        .getOrElse(PaneProcessor.stateValues(PaneState.Created) ++ partials.empty))
      partials.merge(pane, Flags, row, paneIndex + 1)
    }
    val current = touched.foldLeft(open) { case (all, (n, values)) =>
      val state = PaneProcessor.stateOf(Row.fromSeq(values.toSeq)).added
      val row = Row.fromSeq((PaneProcessor.stateValues(state) ++ values.drop(Flags)).toSeq)
      panes.updateValue(n, row)
      all.updated(n, row)
    }
    schedule(current, watermarkMs, wake)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = {
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = ArrayBuffer.empty[Row]
    val (open, _) = advanceAll(key, watermarkMs, out)
    schedule(open, watermarkMs, -1L) // the timer that woke us is gone
    out.iterator
  }

  /** One watermark, once: each pane takes the rule's step. The panes still open afterwards,
   *  and the wake-up timer set. */
  private def advanceAll(key: Row, watermarkMs: Long, out: ArrayBuffer[Row])
      : (Map[Long, Row], Long) = {
    val saved = if (clock.exists()) Some(clock.get()) else None
    val all = panes.iterator().toMap
    val wake = saved.map(_.getLong(1)).getOrElse(-1L)
    if (saved.exists(_.getLong(0) >= watermarkMs)) return (all, wake)
    val w = watermark.of(watermarkMs)
    val open = all.flatMap { case (n, pane) =>
      val before = PaneProcessor.stateOf(pane)
      val step = rule.advance(n, before, w)
      step.fired.foreach { index =>
        out += Row.fromSeq(key.toSeq.take(keyColumns) ++ (n +: metaValues(n, index)) ++
          pane.toSeq.drop(Flags))
      }
      step.next match {
        case None => panes.removeKey(n); None
        case Some(after) if after == before => Some(n -> pane)
        case Some(after) =>
          val updated = Row.fromSeq(PaneProcessor.stateValues(after).toSeq ++
            pane.toSeq.drop(Flags))
          panes.updateValue(n, updated)
          Some(n -> updated)
      }
    }
    clock.update(Row(watermarkMs, wake))
    (open, wake)
  }

  /** The one timer of the key at the earliest (Spark) watermark at which a pane changes;
   *  none, and no state, once every pane closed. */
  private def schedule(open: Map[Long, Row], watermarkMs: Long, wake: Long): Unit = {
    val w = watermark.of(watermarkMs)
    val next = if (open.isEmpty) -1L else open.iterator.map { case (n, pane) =>
      watermark.timerAt(rule.nextChange(n, PaneProcessor.stateOf(pane), w), watermarkMs)
    }.min
    if (next != wake) {
      if (wake >= 0) getHandle.deleteTimer(wake)
      if (next >= 0) getHandle.registerTimer(next)
    }
    if (open.isEmpty) clock.clear() else clock.update(Row(watermarkMs, next))
  }

  private def metaValues(n: Long, index: Long): Seq[Any] =
    PaneProcessor.metaValues(metaNames, geometry, n, index, java8Time)
}

object PanePartialsProcessor {
  def stateSchema(partials: Seq[StructField]): StructType =
    StructType(PaneProcessor.PaneStateFields ++ partials)

  val ClockSchema: StructType = new StructType()
    .add("seen", LongType, nullable = false) // the last (Spark) watermark the panes saw
    .add("wake", LongType, nullable = false) // the registered timer, -1: none
}
