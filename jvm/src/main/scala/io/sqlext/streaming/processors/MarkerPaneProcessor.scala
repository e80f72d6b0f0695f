package io.sqlext.streaming.processors

import io.sqlext.streaming.catalog.StreamCounters
import io.sqlext.streaming.input.{MicroBatchOrder, PaneInput}
import io.sqlext.window._
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * A TIME_INTERVAL window with WATERMARK BY markers in streaming, run as batch replay runs it:
 * one [[TimeIntervalWindow]] over all partitions (one grouping key), the micro-batch's rows in
 * arrival order ([[MicroBatchOrder]]), each marker advancing the watermark between the tuples
 * around it. Markers act across partitions, so no per-partition state machine could see them in
 * order. Spark's own watermark plays no part.
 *
 * State: the watermark and the count of late tuples (`clock`), and each open partition of each
 * pane with its [[PaneState]] and tuples (`parts`, keyed by pane N and partition key). A pane
 * closes at end + discard age, which bounds it. A partition of a pane that fires several times
 * within one micro-batch hands on its last firing only: it holds every tuple of the earlier
 * ones, and the table keeps a pane's last firing anyway (a LATE firing replaces the rows of
 * the earlier ones).
 */
class MarkerPaneProcessor(spec: WindowSpec, input: StructType, metaNames: Seq[String],
    java8Time: Boolean, counters: StreamCounters, paneInput: PaneInput)
    extends StatefulProcessor[Row, Row, Row] {

  /** LATE ROWS INTO: the late row of a tuple dropped at t under w (µs). */
  private val late = paneInput.lateRows(input)

  @transient private var clock: ValueState[Row] = _
  @transient private var parts: MapState[Row, Row] = _

  private val order = MicroBatchOrder.ofRows(spec, input, counters)
  private val geometry = PaneSpec.of(spec)
  private val states = PaneProcessor.States(spec.paneEmit)
  private val keyIndexes = spec.partitionColumns.map(input.fieldIndex).toIndexedSeq
  private val eventIndex = input.fieldIndex(WindowSpec.EventTimeColumn)
  private val markerIndex = input.fieldIndex(WindowSpec.WatermarkColumn)
  private val partKey = StructType(StructField("__sx_pane", LongType, nullable = false) +:
    keyIndexes.map(input.fields(_)))

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    clock = getHandle.getValueState[Row]("clock", Encoders.row(MarkerPaneProcessor.ClockSchema),
      TTLConfig.NONE)
    parts = getHandle.getMapState[Row, Row]("parts", Encoders.row(partKey),
      Encoders.row(MarkerPaneProcessor.partSchema(states, input)), TTLConfig.NONE)
    order.init(getHandle)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val window = new TimeIntervalWindow[Row, Row](geometry,
      row => PaneInput.micros(row.get(eventIndex)), Ordering.by[Row, String](_.toString),
      spec.paneEmit)
    val saved = if (clock.exists()) clock.get() else Row(Long.MinValue, 0L)
    window.restoreClock(saved.getLong(0), saved.getLong(1))
    val before = parts.iterator().map { case (k, part) =>
      val state = states.of(part)
      val tuples = part.getSeq[Row](states.schema.length)
      window.restore(k.getLong(0), Row.fromSeq(k.toSeq.tail), state, tuples)
      k -> (state, tuples.length)
    }.toMap
    // The last firing of each partition of each pane in this micro-batch.
    val last = mutable.LinkedHashMap.empty[(Long, Row), Firing[Row, Row]]
    val emit = (f: Firing[Row, Row]) => { last((f.windowId, f.key)) = f }
    val out = ArrayBuffer.empty[Row]
    val lateFile = paneInput.lateFile() // LATE ROWS INTO: late rows go to a file of its table
    for (toLate <- late; file <- lateFile) {
      window.onLate = (_, tuple, time, watermark) => file.add(toLate(tuple, time, watermark))
    }
    var skipped = 0L
    val now = PaneProcessor.clockOf(timers) // EMIT EARLY's clock: the batch's processing time
    order.sorted(rows.toArray).foreach { row =>
      if (!row.isNullAt(markerIndex)) {
        window.advanceClock(PaneInput.micros(row.get(markerIndex)))(emit)
      } else if (row.isNullAt(eventIndex)) skipped += 1
      else window.insert(Row.fromSeq(keyIndexes.map(row.get)), row, now)(emit)
    }
    window.earlyClock(now)(emit)
    if (skipped > 0) counters.notWindowed.add(skipped)
    if (window.droppedLate > saved.getLong(1)) {
      counters.lateDropped.add(window.droppedLate - saved.getLong(1))
    }
    save(window, before)
    lateFile.foreach(_.finish())
    last.valuesIterator.foreach { f =>
      val meta = PaneProcessor.metaValues(metaNames, geometry, f.windowId,
        PaneFiring(f.paneIndex, f.timing), java8Time)
      f.tuples.foreach(t => out += Row.fromSeq(t.toSeq ++ meta))
    }
    out.iterator
  }

  /** Writes the parts that changed (a part's tuples only grow), removes the closed ones. */
  private def save(window: TimeIntervalWindow[Row, Row],
      before: Map[Row, (PaneState, Int)]): Unit = {
    clock.update(Row(window.currentWatermark, window.droppedLate))
    val now = window.openParts.map { case (n, key, state, tuples) =>
      val k = Row.fromSeq(n +: key.toSeq)
      if (!before.get(k).contains((state, tuples.length))) {
        parts.updateValue(k, Row.fromSeq(states.values(state).toSeq :+ tuples))
      }
      k
    }.toSet
    before.keysIterator.filterNot(now.contains).foreach(parts.removeKey)
  }
}

object MarkerPaneProcessor {
  val ClockSchema: StructType = new StructType()
    .add("watermark", LongType, nullable = false) // µs, Long.MinValue: no marker yet
    .add("late", LongType, nullable = false) // tuples dropped as late, in all

  def partSchema(states: PaneProcessor.States, input: StructType): StructType = states.schema
    .add("tuples", ArrayType(input, containsNull = false), nullable = false)
}
