package io.sqlext.streaming

import io.sqlext.window.{PaneSpec, WindowSpec}
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * The TIME_INTERVAL panes of one partition key when every aggregate has partials (SUM, COUNT,
 * MIN, MAX, AVG): the firing rules of [[PaneProcessor]] (semantics.md section 6), but each pane
 * keeps its flags and running partials instead of its tuples, and tuples are assigned to their
 * panes here, so every tuple crosses the shuffle once rather than once per pane. A firing
 * leaves as one row: key, pane N, firing columns, partials (over all the pane's tuples, late
 * ones included).
 *
 * State: a map from pane N to (complete, fresh, firings, seen, partials...). Every call first
 * lets each pane of the key see the batch's watermark (complete, fire if updated, close: a
 * closed pane leaves the map), then adds the batch's tuples. Acting on all panes at once is
 * what the per-pane timers of [[PaneProcessor]] would do: a pane's state changes only when the
 * watermark advances past one of its times, and then its own timer fires too.
 */
class PanePartialsProcessor(
    spec: WindowSpec,
    input: StructType,
    metaNames: Seq[String],
    java8Time: Boolean) extends StatefulProcessor[Row, Row, Row] {

  @transient private var panes: MapState[Long, Row] = _

  private val partials = new FiringPartials(spec, input, Nil)
  private val geometry = PaneSpec(math.round(spec.duration * 1e6), math.round(spec.period * 1e6),
    math.round(spec.discard * 1e6), math.round(spec.offset * 1e6))
  private val timeIndex = input.fieldIndex(WindowSpec.EventTimeColumn)
  /** An unpartitioned window's grouping key is a constant, not a column of the output. */
  private val keyColumns = spec.partitionColumns.length
  private val Flags = 4 // complete, fresh, firings, seen; the partials follow

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    panes = getHandle.getMapState[Long, Row]("panes", Encoders.scalaLong,
      Encoders.row(PanePartialsProcessor.stateSchema(partials.schema)), TTLConfig.NONE)
  }

  override def handleInputRows(key: Row, rows: Iterator[Row], timers: TimerValues)
      : Iterator[Row] = {
    val watermarkMs = timers.getCurrentWatermarkInMs()
    val out = ArrayBuffer.empty[Row]
    val live = advanceAll(key, watermarkMs, out)
    val touched = mutable.HashMap.empty[Long, Array[Any]]
    rows.foreach { row =>
      geometry.panesOf(micros(row.get(timeIndex))).foreach { n =>
        val pane = touched.getOrElseUpdate(n, live.get(n).map(_.toSeq.toArray).getOrElse {
          registerTimers(n, watermarkMs)
          // created under this watermark: it acts from the next
          Array[Any](false, false, 0L, watermarkMs) ++ partials.empty
        })
        partials.add(pane, row, Flags)
      }
    }
    touched.foreach { case (n, pane) =>
      // A tuple for a pane that is complete (or whose end the watermark passed) re-fires it
      // at the next advancing watermark.
      if (pane(0).asInstanceOf[Boolean] || splWatermark(watermarkMs) >= geometry.end(n)) {
        getHandle.registerTimer(watermarkMs + 1) // a timer fires once watermark >= its time
      }
      pane(1) = true
      panes.updateValue(n, Row.fromSeq(pane.toSeq))
    }
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timers: TimerValues, info: ExpiredTimerInfo)
      : Iterator[Row] = {
    val out = ArrayBuffer.empty[Row]
    advanceAll(key, timers.getCurrentWatermarkInMs(), out)
    out.iterator
  }

  /** One watermark, once per pane: each pane completes, fires if updated, closes. The panes
   *  still open afterwards. */
  private def advanceAll(key: Row, watermarkMs: Long, out: ArrayBuffer[Row])
      : Map[Long, Row] = {
    val open = Map.newBuilder[Long, Row]
    panes.iterator().toSeq.sortBy(_._1).foreach { case (n, pane) =>
      if (pane.getLong(3) >= watermarkMs) open += n -> pane
      else {
        val w = splWatermark(watermarkMs)
        val complete = pane.getBoolean(0) || w >= geometry.end(n)
        var fresh = pane.getBoolean(1)
        var firings = pane.getLong(2)
        if (complete && fresh) {
          out += Row.fromSeq(key.toSeq.take(keyColumns) ++ (n +: metaValues(n, firings)) ++
            pane.toSeq.drop(Flags))
          firings += 1
          fresh = false
        }
        if (complete && w - geometry.discard >= geometry.end(n)) panes.removeKey(n)
        else {
          val updated = Row.fromSeq(Seq(complete, fresh, firings, watermarkMs) ++
            pane.toSeq.drop(Flags))
          panes.updateValue(n, updated)
          open += n -> updated
        }
      }
    }
    open.result()
  }

  /** SPL's watermark from Spark's, as in [[PaneProcessor]]. */
  private def splWatermark(sparkMs: Long): Long =
    (sparkMs + PaneProcessor.BoundaryMs) * 1000L + geometry.discard

  /** Wake-ups for completion (W >= end) and closing (W >= end + discard). */
  private def registerTimers(n: Long, watermarkMs: Long): Unit = {
    def at(splMicros: Long): Long = math.max(
      Math.floorDiv(splMicros - geometry.discard + 999L, 1000L) - PaneProcessor.BoundaryMs,
      watermarkMs + 1)
    getHandle.registerTimer(at(geometry.end(n)))
    getHandle.registerTimer(at(geometry.end(n) + geometry.discard))
  }

  private def metaValues(n: Long, index: Long): Seq[Any] =
    PaneProcessor.metaValues(metaNames, geometry, n, index, java8Time)

  private def micros(time: Any): Long = time match {
    case t: java.sql.Timestamp => DateTimeUtils.fromJavaTimestamp(t)
    case t: java.time.Instant => DateTimeUtils.instantToMicros(t)
  }
}

object PanePartialsProcessor {
  def stateSchema(partials: Seq[StructField]): StructType =
    StructType(PaneProcessor.FlagSchema.fields ++ partials)
}
