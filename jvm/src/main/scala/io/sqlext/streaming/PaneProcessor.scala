package io.sqlext.streaming

import io.sqlext.window.{PaneRule, PaneSpec, PaneState, WindowSpec}
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
 * The tuples SPL drops never get here ([[PaneInput]]). Each call first lets the pane see the
 * batch's watermark once (complete, fire if updated, close), then adds the batch's tuples: a
 * watermark computed after micro-batch b acts before the tuples of batch b + 1. A timer at the
 * pane's next change ([[PaneRule.nextChange]]) wakes a pane that receives no tuples. A firing
 * hands on every tuple of the pane ([[PanePartialsProcessor]] keeps partials instead, when the
 * aggregates allow).
 */
class PaneProcessor(
    spec: WindowSpec,
    input: StructType,
    metaNames: Seq[String],
    java8Time: Boolean) extends StatefulProcessor[Row, Row, Row] {

  @transient private var flags: ValueState[Row] = _
  @transient private var tuples: ListState[Row] = _

  private val geometry = PaneSpec.of(spec)
  private val rule = PaneRule(geometry)
  private val watermark = SplWatermark(geometry)

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
    // A pane created under this watermark acts from the next one.
    val pane = if (flags.exists()) PaneProcessor.stateOf(flags.get()).added else PaneState.Created
    tuples.appendList(rows.toArray)
    keep(n, pane, watermarkMs)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = advance(key.getLong(key.length - 1), timers.getCurrentWatermarkInMs())
    .iterator

  /** One watermark, once per pane: the rule's step, its firing handed on. */
  private def advance(n: Long, watermarkMs: Long): ArrayBuffer[Row] = {
    val out = ArrayBuffer.empty[Row]
    if (!flags.exists() || flags.get().getLong(3) >= watermarkMs) return out
    val step = rule.advance(n, PaneProcessor.stateOf(flags.get()), watermark.of(watermarkMs))
    step.fired.foreach { index =>
      val meta = PaneProcessor.metaValues(metaNames, geometry, n, index, java8Time)
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
    flags.update(Row.fromSeq(PaneProcessor.stateValues(pane).toSeq :+ watermarkMs))
    val next = rule.nextChange(n, pane, watermark.of(watermarkMs))
    getHandle.registerTimer(watermark.timerAt(next, watermarkMs))
  }
}

object PaneProcessor {

  /** A pane's [[PaneState]] as the first columns of a state row, in every pane processor. */
  val PaneStateFields: Seq[StructField] = Seq(
    StructField("complete", BooleanType, nullable = false),
    StructField("fresh", BooleanType, nullable = false), // tuples arrived since the last firing
    StructField("firings", LongType, nullable = false))

  def stateValues(pane: PaneState): Array[Any] = Array(pane.complete, pane.fresh, pane.firings)

  def stateOf(row: Row): PaneState =
    PaneState(row.getBoolean(0), row.getBoolean(1), row.getLong(2))

  /** The firing columns `metaNames` of firing `index` of pane N. */
  def metaValues(metaNames: Seq[String], geometry: PaneSpec, n: Long, index: Long,
      java8Time: Boolean): Seq[Any] = {
    // The external timestamp type the session's encoders expect.
    def timestamp(micros: Long): Any = if (java8Time) DateTimeUtils.microsToInstant(micros)
      else DateTimeUtils.toJavaTimestamp(micros)
    metaNames.map {
      case WindowSpec.FireColumn | "__sx_wid" => n
      case "__sx_pstart" => timestamp(geometry.start(n))
      case "__sx_pend" => timestamp(geometry.end(n))
      case "__sx_timing" => if (index == 0) "ON_TIME" else "LATE"
      case "__sx_pidx" => index
      case "__sx_event" => "TRIGGER"
    }
  }

  val FlagSchema: StructType = StructType(PaneStateFields)
    .add("seen", LongType, nullable = false) // the last (Spark) watermark acted on
}
