package io.sqlext.streaming.processors

import io.sqlext.Contract
import io.sqlext.streaming.input.MicroBatchOrder
import io.sqlext.streaming.time.SplWatermark
import io.sqlext.window.{PaneEmit, PaneFiring, PaneRule, PaneSpec, PaneState, WindowSpec}
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable.ArrayBuffer

/**
 * One TIME_INTERVAL pane of one partition under `transformWithState`, driving [[PaneRule]]
 * (semantics.md section 6) as batch replay does: the grouping key is (partition keys, pane N),
 * the tuples arrive already expanded to their panes. State per key: the pane's [[PaneState]]
 * and the last Spark watermark it saw, and its tuples as a list state, appended once per
 * micro-batch (never rewritten).
 *
 * The tuples SPL drops never get here ([[io.sqlext.streaming.input.PaneInput]]). Each call first
 * lets the pane see the batch's watermark once (complete, fire if updated, close), then adds the
 * batch's tuples: a watermark computed after micro-batch b acts before the tuples of batch b + 1. A
 * timer at the pane's next change ([[PaneRule.nextChange]]) wakes a pane that receives no tuples.
 * Under EMIT EARLY the pane may then fire early, by the micro-batch's processing time (the same in
 * every attempt of the batch). A firing hands on every tuple of the pane ([[PanePartialsProcessor]]
 * keeps partials instead, when the aggregates allow).
 */
class PaneProcessor(
    spec: WindowSpec,
    input: StructType,
    metaNames: Seq[String],
    java8Time: Boolean) extends StatefulProcessor[Row, Row, Row] {

  @transient private var flags: ValueState[Row] = _
  @transient private var tuples: ListState[Row] = _

  private val geometry = PaneSpec.of(spec)
  private val rule = PaneRule(geometry, spec.paneEmit)
  private val watermark = SplWatermark(geometry)
  private val states = PaneProcessor.States(spec.paneEmit)
  private val numbering = new MicroBatchOrder.PaneNumbering(spec, input)

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    flags = getHandle.getValueState[Row]("pane", Encoders.row(states.schema
      .add("seen", LongType, nullable = false)), // the last (Spark) watermark acted on
      TTLConfig.NONE)
    tuples = getHandle.getListState[Row]("tuples", Encoders.row(input), TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val n = key.getLong(key.length - 1)
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = advance(n, watermarkMs)
    val clock = PaneProcessor.clockOf(timers)
    val w = watermark.of(watermarkMs)
    // A pane created under this watermark acts from the next one.
    val pane = if (flags.exists()) states.of(flags.get()).added else rule.created(clock)
    // In arrival order, numbered across micro-batches: FIRST, LAST and COLLECT_LIST follow it.
    tuples.appendList(numbering(rows.toArray, getHandle))
    keep(n, early(n, pane, clock, w, out), watermarkMs)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = {
    val n = key.getLong(key.length - 1)
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = advance(n, watermarkMs)
    if (flags.exists()) {
      val pane = states.of(flags.get())
      val after = early(n, pane, PaneProcessor.clockOf(timers), watermark.of(watermarkMs), out)
      if (after != pane) keep(n, after, flags.get().getLong(states.schema.length))
    }
    out.iterator
  }

  /** EMIT EARLY: the pane's early firing at `clock`, if it may; its state afterwards. */
  private def early(n: Long, pane: PaneState, clock: Long, w: Long, out: ArrayBuffer[Row])
      : PaneState = rule.early(n, pane, clock, w) match {
      case Some((firing, after)) =>
        val meta = PaneProcessor.metaValues(metaNames, geometry, n, firing, java8Time)
        tuples.get().foreach(t => out += Row.fromSeq(t.toSeq ++ meta))
        after
      case None => pane
    }

  /** One watermark, once per pane: the rule's step, its firing handed on. */
  private def advance(n: Long, watermarkMs: Long): ArrayBuffer[Row] = {
    val out = ArrayBuffer.empty[Row]
    if (!flags.exists() || flags.get().getLong(states.schema.length) >= watermarkMs) return out
    val step = rule.advance(n, states.of(flags.get()), watermark.of(watermarkMs))
    step.fired.foreach { firing =>
      val meta = PaneProcessor.metaValues(metaNames, geometry, n, firing, java8Time)
      tuples.get().foreach(t => out += Row.fromSeq(t.toSeq ++ meta))
    }
    step.next match {
      case Some(pane) => keep(n, pane, watermarkMs)
      case None => flags.clear(); tuples.clear()
    }
    out
  }

  /** Saves the pane as seen under `watermarkMs` and wakes it at its next change. */
  private def keep(n: Long, pane: PaneState, watermarkMs: Long): Unit = {
    flags.update(Row.fromSeq(states.values(pane).toSeq :+ watermarkMs))
    val next = rule.nextChange(n, pane, watermark.of(watermarkMs))
    getHandle.registerTimer(watermark.timerAt(next, watermarkMs))
  }
}

object PaneProcessor {

  /** A pane's [[PaneState]] as the first columns of a state row, in every pane processor;
   *  EMIT EARLY adds the clock of its next early firing (without, the state keeps the shape
   *  checkpoints written before EMIT EARLY have). */
  final case class States(emit: PaneEmit) {
    private val early = emit.isInstanceOf[PaneEmit.Early]

    val schema: StructType = {
      val flags = new StructType()
        .add("complete", BooleanType, nullable = false)
        .add("fresh", BooleanType, nullable = false) // tuples arrived since the last firing
        .add("firings", LongType, nullable = false)
      if (early) flags.add("early_at", LongType, nullable = false) else flags
    }

    def values(pane: PaneState): Array[Any] =
      if (early) Array(pane.complete, pane.fresh, pane.firings, pane.earlyAt)
      else Array(pane.complete, pane.fresh, pane.firings)

    /** The state from the first columns of `row` (or of an array laid out alike). */
    def of(row: Row): PaneState = of(i => row.get(i))

    def of(value: Int => Any): PaneState = PaneState(value(0).asInstanceOf[Boolean],
      value(1).asInstanceOf[Boolean], value(2).asInstanceOf[Long],
      if (early) value(3).asInstanceOf[Long] else Long.MaxValue)
  }

  /** The window's clock in streaming (EMIT EARLY): the micro-batch's processing time, µs. */
  def clockOf(timers: TimerValues): Long = timers.getCurrentProcessingTimeInMs() * 1000L

  /** A timestamp (µs) in the external type the session's encoders expect. */
  def timestamp(micros: Long, java8Time: Boolean): Any =
    if (java8Time) DateTimeUtils.microsToInstant(micros) else DateTimeUtils.toJavaTimestamp(micros)

  /** The firing columns `metaNames` of a firing of pane N. */
  def metaValues(metaNames: Seq[String], geometry: PaneSpec, n: Long, firing: PaneFiring,
      java8Time: Boolean): Seq[Any] = {
    metaNames.map {
      case WindowSpec.FireColumn | Contract.WindowIdColumn => n
      case Contract.PaneStartColumn => timestamp(geometry.start(n), java8Time)
      case Contract.PaneEndColumn => timestamp(geometry.end(n), java8Time)
      case Contract.PaneTimingColumn => firing.timing
      case Contract.PaneIndexColumn => firing.index
      case Contract.WindowEventColumn => firing.event
    }
  }
}
