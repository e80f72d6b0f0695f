package io.sqlext.streaming.input

import io.sqlext.replay.LateRows
import io.sqlext.streaming.catalog.StreamCounters
import io.sqlext.streaming.delta.LateRowFiles
import io.sqlext.streaming.time.{IdleClock, LateDropPoint, SplWatermark}
import io.sqlext.window.{Micros, PaneRule, PaneSpec, WindowSpec}
import org.apache.spark.sql.{functions, DataFrame, Encoders, Row}
import org.apache.spark.sql.sqlext.CatalystColumns
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.{DateTimeUtils, GenericArrayData}
import org.apache.spark.sql.functions.expr
import org.apache.spark.sql.types._
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.util.SerializableConfiguration

/**
 * What reaches the pane processors of a streaming TIME_INTERVAL window, decided before the shuffle
 * with the micro-batch's own watermark ([[io.sqlext.streaming.time.BatchWatermark]]): tuples below
 * SPL's drop point W - A are dropped and counted (semantics.md section 6), as are tuples without an
 * event time. Spark's own late filter would use the previous batch's watermark, which lets through
 * tuples of panes already closed under this one, where they would open the pane again.
 *
 * With partial aggregates the tuples of one map task are then combined per (partition key, pane
 * N): the shuffle, its sort and the processor see one row per pane and task, not one per tuple
 * and pane.
 *
 * LATE ROWS INTO: the late tuples of a task are written there, as late rows ([[LateRows]]),
 * to a file of the late table ([[LateRowFiles]]); they never reach the shuffle.
 */
final class PaneInput(
    spec: WindowSpec,
    checkpoint: String,
    hadoopConf: Broadcast[SerializableConfiguration], // the session's: tasks have no session
    counters: StreamCounters,
    lateFiles: Option[LateRowFiles]) extends Serializable {
  private val geometry = PaneSpec.of(spec)
  private val keepsLate = spec.keepsLateRows

  /** LATE ROWS INTO: the late row, in Spark's internal form (no conversion on its way to the
   *  file), of a tuple of `tuples` dropped at `t` under `w` (µs); `ofSource`: the row given is
   *  the struct of the tuple's source columns, not the tuple. */
  def lateRows(tuples: StructType, ofSource: Boolean = false)
      : Option[(Row, Long, Long) => InternalRow] = Option.when(keepsLate) {
    val fields = LateRows.sourceFields(tuples)
    val indexes = if (ofSource) fields.indices.toArray
      else fields.map(f => tuples.fieldIndex(f.name)).toArray
    val converters = fields.map(f =>
      CatalystTypeConverters.createToCatalystConverter(f.dataType)).toArray
    val panes = geometry
    (row: Row, t: Long, w: Long) => {
      val values = new Array[Any](indexes.length + 3)
      var i = 0
      while (i < indexes.length) {
        values(i) = if (row.isNullAt(indexes(i))) null else converters(i)(row.get(indexes(i)))
        i += 1
      }
      values(i) = t // timestamps are µs inside Spark
      values(i + 1) = w
      values(i + 2) = new GenericArrayData(LateRows.panesOf(panes, t).map { case (s, e) =>
        new GenericInternalRow(Array[Any](s, e)) }.toArray[Any])
      new GenericInternalRow(values)
    }
  }

  /** LATE ROWS INTO: the writer of the calling task's late rows to a file of the late table. */
  def lateFile(): Option[LateRowFiles.TaskFile] = Option.when(keepsLate)(lateFiles.getOrElse(
    throw new IllegalStateException("sql_ext: a stream with LATE ROWS INTO planned without " +
      "its late table")).forTask())

  /** Each tuple that is not late once per pane containing it, pane N in __sx_fire (none in a
   *  gap between panes, as in batch). */
  def expanded(tuples: DataFrame): DataFrame = {
    val schema = tuples.schema
    val output = schema.add(WindowSpec.FireColumn, LongType, nullable = false)
    val time = schema.fieldIndex(WindowSpec.EventTimeColumn)
    val beat = schema.fieldNames.indexOf(IdleClock.BeatColumn) // WATERMARK IDLE
    val toLate = lateRows(schema)
    val (cp, conf, counted, panes) = (checkpoint, hadoopConf, counters, geometry)
    tuples.mapPartitions { rows: Iterator[Row] =>
      val w = SplWatermark(panes).ofBatch(cp, conf.value.value)
      val rule = PaneRule(panes)
      val lateOut = lateFile()
      rows.flatMap { row =>
        if (beat >= 0 && row.getBoolean(beat)) Iterator.empty // the idle clock's: it did its part
        else if (row.isNullAt(time)) { counted.notWindowed.add(1); Iterator.empty }
        else {
          val t = PaneInput.micros(row.get(time))
          if (rule.isLate(t, w)) {
            counted.lateDropped.add(1)
            toLate.foreach(late => lateOut.foreach(_.add(late(row, t, w))))
            Iterator.empty
          } else panes.panesOf(t).map(n => Row.fromSeq(row.toSeq :+ n))
        }
      } ++ { lateOut.foreach(_.finish()); Iterator.empty } // once the task's input is read
    }(Encoders.row(output)).toDF()
  }

  /** Key columns, pane N (__sx_fire), then the partials of [[FiringPartials]] over the tuples of
   *  the map task in that pane. */
  def combined(tuples: DataFrame): DataFrame = {
    val keys = spec.partitionColumns
    val read = spec.aggregates.map(_._2).filter(_ != "*").distinct.filterNot(keys.contains)
    // LATE ROWS INTO: the source columns of a late tuple; NULL (nothing to convert) for the
    // others, decided before the rows leave Spark's format.
    val sourceColumns = if (!keepsLate) Nil else Seq(functions.when(
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
    val partials = new FiringPartials(spec, schema)
    val output = PartialsByKey.schema(schema, keys, WindowSpec.FireColumn, partials)
    val (cp, conf, counted) = (checkpoint, hadoopConf, counters)
    val (panes, keyCount) = (geometry, keys.length)
    val toLate = lateRows(tuples.schema, ofSource = true)
    val time = schema.fieldIndex(PaneInput.MicrosColumn)
    val beat = schema.fieldNames.indexOf(IdleClock.BeatColumn)
    narrow.mapPartitions { rows: Iterator[Row] =>
      val w = SplWatermark(panes).ofBatch(cp, conf.value.value)
      val rule = PaneRule(panes)
      val lateOut = lateFile()
      val open = new PartialsByKey(partials, keyCount)
      rows.foreach { row =>
        if (beat >= 0 && row.getBoolean(beat)) () // the idle clock's row: it did its part
        else if (row.isNullAt(time)) counted.notWindowed.add(1)
        else {
          val t = row.getLong(time)
          if (rule.isLate(t, w)) {
            counted.lateDropped.add(1)
            toLate.foreach(late => lateOut.foreach(_.add(late(row.getStruct(row.length - 1), t,
              w))))
          } else {
            val byPane = open.of(row)
            // None in a gap between panes (period > duration), as in batch.
            panes.panesOf(t).foreach(n => open.add(byPane, n, row))
          }
        }
      }
      open.rows ++ { lateOut.foreach(_.finish()); Iterator.empty } // the file written meanwhile
    }(Encoders.row(output)).toDF()
  }
}

object PaneInput {
  val MicrosColumn = "__sx_emicros"

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
