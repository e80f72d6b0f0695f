package io.sqlext.streaming.processors

import io.sqlext.streaming.input.FiringPartials
import io.sqlext.streaming.time.SplWatermark
import io.sqlext.window.{PaneEmit, PaneFiring, PaneRule, PaneSpec, PaneState, WindowSpec}
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * The TIME_INTERVAL panes of one partition key when every aggregate has partials (SUM, COUNT, MIN,
 * MAX, AVG): the firing rules of [[PaneProcessor]] (semantics.md section 6), but each pane keeps
 * its flags and running partials instead of its tuples. Its input is already combined per map task
 * and pane ([[io.sqlext.streaming.input.PaneInput.combined]], late tuples dropped there): key
 * columns, pane N, partials, merged here into the pane's. A firing leaves as one row: key, pane N,
 * firing columns, the aggregates' values (over all the pane's tuples, late ones included).
 *
 * State: one value per key holding all its open panes (N, [[PaneState]], partials), the last
 * watermark its panes saw and its one wake-up timer, so a key costs one state read and one
 * write per micro-batch however many panes it has open (a pane per state entry cost a read of
 * every open pane and a write of every changed one). Every call first lets all panes of the
 * key take [[PaneRule]]'s step under the batch's watermark once (complete, fire if updated,
 * close: a closed pane leaves), then adds the batch's tuples, then sets the timer at the
 * earliest of the panes' next changes ([[PaneRule.nextChange]]). Acting on all panes at once is
 * what per-pane timers would do: a pane changes only when the watermark reaches one of those.
 * Under EMIT EARLY, panes then fire early by the micro-batch's processing time.
 */
class PanePartialsProcessor(
    spec: WindowSpec,
    tuples: StructType, // the columns the partials read (names and types)
    metaNames: Seq[String],
    java8Time: Boolean) extends StatefulProcessor[Row, Row, Row] {

  @transient private var state: ValueState[Row] = _

  private val partials = new FiringPartials(spec, tuples)
  private val geometry = PaneSpec.of(spec)
  private val rule = PaneRule(geometry, spec.paneEmit)
  private val watermark = SplWatermark(geometry)
  private val states = PaneProcessor.States(spec.paneEmit)
  /** An unpartitioned window's grouping key is a constant, not a column of the output. */
  private val keyColumns = spec.partitionColumns.length
  private val paneIndex = keyColumns // input rows: key columns, N, partials ([[PaneInput]])
  private val Flags = states.schema.length // the pane's state; the partials follow

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    state = getHandle.getValueState[Row]("key_panes",
      Encoders.row(PanePartialsProcessor.stateSchema(states.schema ++ partials.partialSchema)),
      TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = ArrayBuffer.empty[Row]
    val keyState = load()
    advanceAll(key, keyState, watermarkMs, out)
    val clock = PaneProcessor.clockOf(timers)
    val touched = mutable.Set.empty[Long]
    rows.foreach { row =>
      val n = row.getLong(paneIndex)
      // A new pane acts from the next watermark on (its creation is under this one).
      val pane = keyState.panes.getOrElseUpdate(n,
        states.values(rule.created(clock)) ++ partials.partialValues(partials.empty))
      val merged = partials.partialsOf(pane, Flags)
      partials.merge(merged, row, paneIndex + 1)
      partials.partialValues(merged).copyToArray(pane, Flags)
      touched += n
    }
    touched.foreach { n =>
      val pane = keyState.panes(n)
      val added = paneState(pane).added
      states.values(added).copyToArray(pane)
    }
    earlyAll(key, keyState, clock, watermark.of(watermarkMs), out)
    schedule(keyState, watermarkMs)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = {
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = ArrayBuffer.empty[Row]
    val keyState = load()
    keyState.wake = -1L // the timer that woke us is gone
    advanceAll(key, keyState, watermarkMs, out)
    earlyAll(key, keyState, PaneProcessor.clockOf(timers), watermark.of(watermarkMs), out)
    schedule(keyState, watermarkMs)
    out.iterator
  }

  /** The key's saved panes (N -> flags and partials), last watermark and timer. */
  private def load(): PanePartialsProcessor.KeyState = {
    val keyState = new PanePartialsProcessor.KeyState
    if (state.exists()) {
      val saved = state.get()
      keyState.seen = saved.getLong(0)
      keyState.wake = saved.getLong(1)
      saved.getSeq[Row](2).foreach { pane =>
        keyState.panes(pane.getLong(0)) = pane.toSeq.drop(1).toArray
      }
    }
    keyState
  }

  /** One watermark, once: each pane takes the rule's step; closed panes leave. */
  private def advanceAll(key: Row, keyState: PanePartialsProcessor.KeyState, watermarkMs: Long,
      out: ArrayBuffer[Row]): Unit = {
    if (keyState.seen >= watermarkMs) return
    val w = watermark.of(watermarkMs)
    val closed = mutable.ArrayBuffer.empty[Long]
    keyState.panes.foreach { case (n, pane) =>
      val before = paneState(pane)
      val step = rule.advance(n, before, w)
      step.fired.foreach(firing => out += firingRow(key, n, firing, pane))
      step.next match {
        case None => closed += n
        case Some(after) => states.values(after).copyToArray(pane)
      }
    }
    closed.foreach(keyState.panes.remove) // not while iterating the map
    keyState.seen = watermarkMs
  }

  /** EMIT EARLY: the panes that may fire early at `clock` do, in pane order. */
  private def earlyAll(key: Row, keyState: PanePartialsProcessor.KeyState, clock: Long,
      w: Long, out: ArrayBuffer[Row]): Unit = if (spec.paneEmit.isInstanceOf[PaneEmit.Early]) {
    keyState.panes.toSeq.sortBy(_._1).foreach { case (n, pane) =>
      rule.early(n, paneState(pane), clock, w).foreach { case (firing, after) =>
        out += firingRow(key, n, firing, pane)
        states.values(after).copyToArray(pane)
      }
    }
  }

  /** Key, pane N, firing columns, the aggregates' values over the pane's partials. */
  private def firingRow(key: Row, n: Long, firing: PaneFiring, pane: Array[Any]): Row =
    Row.fromSeq(key.toSeq.take(keyColumns) ++ (n +: metaValues(n, firing)) ++
      partials.results(partials.partialsOf(pane, Flags)))

  /** The one timer of the key at the earliest (Spark) watermark at which a pane changes, and
   *  the key's state written once; none, and no state, once every pane closed. */
  private def schedule(keyState: PanePartialsProcessor.KeyState, watermarkMs: Long): Unit = {
    val w = watermark.of(watermarkMs)
    val next = if (keyState.panes.isEmpty) -1L else keyState.panes.iterator.map {
      case (n, pane) => watermark.timerAt(
        rule.nextChange(n, paneState(pane), w),
        watermarkMs)
    }.min
    if (next != keyState.wake) {
      if (keyState.wake >= 0) getHandle.deleteTimer(keyState.wake)
      if (next >= 0) getHandle.registerTimer(next)
    }
    if (keyState.panes.isEmpty) state.clear()
    else state.update(Row(watermarkMs, next,
      keyState.panes.toSeq.sortBy(_._1).map { case (n, pane) => Row.fromSeq(n +: pane.toSeq) }))
  }

  /** The [[PaneState]] of a pane's flags and partials (the flags first). */
  private def paneState(pane: Array[Any]): PaneState = states.of(i => pane(i))

  private def metaValues(n: Long, firing: PaneFiring): Seq[Any] =
    PaneProcessor.metaValues(metaNames, geometry, n, firing, java8Time)
}

object PanePartialsProcessor {
  /** A key's state: the last (Spark) watermark its panes saw, its registered timer (-1: none)
   *  and its open panes, each N, its [[PaneState]] and its partials (`pane`). */
  def stateSchema(pane: Seq[StructField]): StructType = new StructType()
    .add("seen", LongType, nullable = false)
    .add("wake", LongType, nullable = false)
    .add("panes", ArrayType(StructType(StructField("n", LongType, nullable = false) +: pane),
      containsNull = false), nullable = false)

  /** The key's state while a call works on it. */
  final class KeyState {
    var seen: Long = Long.MinValue
    var wake: Long = -1L
    val panes: mutable.LongMap[Array[Any]] = mutable.LongMap.empty
  }
}
