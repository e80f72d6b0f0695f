package io.sqlext.streaming

import io.sqlext.execution.LateRows
import io.sqlext.window.{Micros, PaneRule, PaneSpec, WindowSpec}
import org.apache.spark.sql.{functions, DataFrame, Encoders, Row}
import org.apache.spark.sql.sqlext.CatalystColumns
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.functions.expr
import org.apache.spark.sql.types._
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.util.{LongAccumulator, SerializableConfiguration}

import scala.collection.mutable

/**
 * What reaches the pane processors of a streaming TIME_INTERVAL window, decided before the
 * shuffle with the micro-batch's own watermark ([[BatchWatermark]]): tuples below SPL's drop
 * point W - A are dropped and counted (semantics.md section 6), as are tuples without an event
 * time. Spark's own late filter would use the previous batch's watermark, which lets through
 * tuples of panes already closed under this one, where they would open the pane again.
 *
 * With partial aggregates the tuples of one map task are then combined per (partition key, pane
 * N): the shuffle, its sort and the processor see one row per pane and task, not one per tuple
 * and pane.
 *
 * LATE ROWS INTO: a late tuple also goes on, as its late row ([[LateRows]]) in the column
 * __sx_late of a row of pane [[PaneInput.LatePane]], which the processors hand on untouched:
 * the micro-batch's output then holds its firings and its late rows, written in one pass.
 */
final class PaneInput(
    spec: WindowSpec,
    checkpoint: String,
    hadoopConf: Broadcast[SerializableConfiguration], // the session's: tasks have no session
    counters: StreamCounters,
    java8Time: Boolean) extends Serializable {
  private val geometry = PaneSpec.of(spec)
  private val keepsLate = spec.keepsLateRows

  /** The __sx_late column, when the window keeps late rows (event times are timestamps). */
  def lateField(tuples: StructType): Option[StructField] = Option.when(keepsLate)(StructField(
    LateRows.Column, LateRows.schema(tuples, TimestampType, TimestampType), nullable = true))

  /** LATE ROWS INTO: the late row of a tuple of `tuples`, dropped at `t` under `w` (µs). */
  def lateRows(tuples: StructType): Option[(Row, Long, Long) => Row] = Option.when(keepsLate) {
    val sources = LateRows.sourceFields(tuples).map(f => tuples.fieldIndex(f.name))
    (row: Row, t: Long, w: Long) => lateRow(sources.map(row.get), t, w)
  }

  /** The late row of a tuple whose source columns are `source`, at `t` dropped under `w` (µs). */
  private def lateRow(source: Seq[Any], t: Long, w: Long): Row = {
    def timestamp(micros: Long): Any = PaneProcessor.timestamp(micros, java8Time)
    Row.fromSeq(source ++ Seq(timestamp(t), timestamp(w),
      LateRows.panesOf(geometry, t).map { case (s, e) => Row(timestamp(s), timestamp(e)) }))
  }

  /** Each tuple that is not late once per pane containing it, pane N in __sx_fire (none in a
   *  gap between panes, as in batch). */
  def expanded(tuples: DataFrame): DataFrame = {
    val schema = tuples.schema
    val late = lateField(schema)
    val output = late.foldLeft(schema.add(WindowSpec.FireColumn, LongType, nullable = false))(
      _.add(_))
    val time = schema.fieldIndex(WindowSpec.EventTimeColumn)
    val beat = schema.fieldNames.indexOf(IdleClock.BeatColumn) // WATERMARK IDLE
    val toLate = lateRows(schema)
    val (cp, conf, counted, panes) = (checkpoint, hadoopConf, counters, geometry)
    val tail: Seq[Any] = if (late.isDefined) Seq(null) else Nil
    tuples.mapPartitions { rows: Iterator[Row] =>
      val w = SplWatermark(panes).ofBatch(cp, conf.value.value)
      val rule = PaneRule(panes)
      rows.flatMap { row =>
        if (beat >= 0 && row.getBoolean(beat)) Iterator.empty // the idle clock's: it did its part
        else if (row.isNullAt(time)) { counted.notWindowed.add(1); Iterator.empty }
        else {
          val t = PaneInput.micros(row.get(time))
          if (rule.isLate(t, w)) {
            counted.lateDropped.add(1)
            toLate.iterator.map(late => Row.fromSeq(row.toSeq ++ Seq(PaneInput.LatePane,
              late(row, t, w))))
          } else panes.panesOf(t).map(n => Row.fromSeq(row.toSeq ++ (n +: tail)))
        }
      }
    }(Encoders.row(output)).toDF()
  }

  /** Key columns, pane N (__sx_fire), then the partials of [[FiringPartials]] over the tuples of
   *  the map task in that pane. */
  def combined(tuples: DataFrame): DataFrame = {
    val keys = spec.partitionColumns
    val read = spec.aggregates.map(_._2).filter(_ != "*").distinct.filterNot(keys.contains)
    val late = lateField(tuples.schema)
    // LATE ROWS INTO: the source columns of a late tuple; NULL (nothing to convert) for the
    // others, decided before the rows leave Spark's format.
    val sourceColumns = if (late.isEmpty) Nil else Seq(functions.when(
      expr(s"unix_micros(`${WindowSpec.EventTimeColumn}`)") < CatalystColumns.of(
        LateDropPoint(geometry, checkpoint, hadoopConf)),
      functions.struct(LateRows.sourceFields(tuples.schema).map(f =>
        tuples.col(s"`${f.name}`")): _*)).as("__sx_src"))
    // Event time as a long: no Timestamp object per tuple.
    val beats = if (tuples.schema.fieldNames.contains(IdleClock.BeatColumn)) { // WATERMARK IDLE
      Seq(tuples.col(IdleClock.BeatColumn))
    } else Nil
    val narrow = tuples.select(((keys ++ read).map(c => tuples.col(s"`$c`")) :+
      expr(s"unix_micros(`${WindowSpec.EventTimeColumn}`)").as(PaneInput.MicrosColumn)) ++
      beats ++ sourceColumns: _*)
    val schema = narrow.schema
    val partials = new FiringPartials(spec, schema, Nil)
    val output = StructType(keys.map(c => schema(c)) ++
      (StructField(WindowSpec.FireColumn, LongType, nullable = false) +: partials.schema) ++
      late)
    val (cp, conf, counted) = (checkpoint, hadoopConf, counters)
    val (panes, keyCount) = (geometry, keys.length)
    val time = schema.fieldIndex(PaneInput.MicrosColumn)
    val beat = schema.fieldNames.indexOf(IdleClock.BeatColumn)
    val tail: Seq[Any] = if (late.isDefined) Seq(null) else Nil
    narrow.mapPartitions { rows: Iterator[Row] =>
      val w = SplWatermark(panes).ofBatch(cp, conf.value.value)
      val rule = PaneRule(panes)
      val lateRows = mutable.ArrayBuffer.empty[Row]
      // Partition key -> pane N -> partials.
      val open = mutable.HashMap.empty[Any, mutable.LongMap[Array[Any]]]
      rows.foreach { row =>
        if (beat >= 0 && row.getBoolean(beat)) () // the idle clock's row: it did its part
        else if (row.isNullAt(time)) counted.notWindowed.add(1)
        else {
          val t = row.getLong(time)
          if (rule.isLate(t, w)) {
            counted.lateDropped.add(1)
            if (late.isDefined) lateRows += Row.fromSeq(row.toSeq.take(keyCount) ++
              (PaneInput.LatePane +: partials.empty) :+
              lateRow(row.getStruct(row.length - 1).toSeq, t, w))
          } else {
            val key: Any = if (keyCount == 1) row.get(0)
              else Row.fromSeq(row.toSeq.take(keyCount))
            val byPane = open.getOrElseUpdate(key, mutable.LongMap.empty[Array[Any]])
            // None in a gap between panes (period > duration), as in batch.
            panes.panesOf(t).foreach { n =>
              partials.add(byPane.getOrElseUpdate(n, partials.empty), row)
            }
          }
        }
      }
      open.iterator.flatMap { case (key, byPane) =>
        val keyValues = if (keyCount == 1) Seq(key) else key.asInstanceOf[Row].toSeq
        byPane.iterator.map { case (n, values) => Row.fromSeq((keyValues :+ n) ++ values ++ tail) }
      } ++ lateRows.iterator
    }(Encoders.row(output)).toDF()
  }
}

object PaneInput {
  val MicrosColumn = "__sx_emicros"
  /** The pane number of a row that carries a late row (no pane has it). */
  val LatePane: Long = Long.MinValue

  /** An event time or watermark in µs: timestamps as they are, numbers as seconds (as batch
   *  replay reads them). */
  def micros(time: Any): Long = time match {
    case t: java.sql.Timestamp => DateTimeUtils.fromJavaTimestamp(t)
    case t: java.time.Instant => DateTimeUtils.instantToMicros(t)
    case t: java.time.LocalDateTime => DateTimeUtils.localDateTimeToMicros(t)
    case n @ (_: java.lang.Long | _: java.lang.Integer | _: java.lang.Short | _: java.lang.Byte) =>
      n.asInstanceOf[Number].longValue() * 1000000L
    case n: Number => Micros.of(n.doubleValue())
    case other => throw new IllegalArgumentException(s"an event time or watermark of $other")
  }
}

/** What a streaming table drops or cannot put in order, counted on the executors and read by
 *  SHOW STREAMS. */
final class StreamCounters(val lateDropped: LongAccumulator, val notWindowed: LongAccumulator,
    val outOfOrder: LongAccumulator) extends Serializable
