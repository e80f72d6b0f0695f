package io.sqlext.streaming

import io.sqlext.window.{PaneSpec, WindowSpec}
import org.apache.spark.sql.{DataFrame, Encoders, Row}
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
 */
final class PaneInput(
    spec: WindowSpec,
    checkpoint: String,
    hadoopConf: Broadcast[SerializableConfiguration], // the session's: tasks have no session
    counters: StreamCounters) extends Serializable {
  private val geometry = PaneInput.geometry(spec)

  /** The tuples that are not late, event time as is (for the tuple path's expansion). */
  def onTime(tuples: DataFrame): DataFrame = {
    val schema = tuples.schema
    val time = schema.fieldIndex(WindowSpec.EventTimeColumn)
    val (cp, conf, counted) = (checkpoint, hadoopConf, counters)
    tuples.mapPartitions { rows: Iterator[Row] =>
      val drop = PaneInput.dropPoint(BatchWatermark.current(cp, conf.value.value))
      rows.filter { row =>
        if (row.isNullAt(time)) { counted.notWindowed.add(1); false }
        else if (PaneInput.micros(row.get(time)) < drop) { counted.lateDropped.add(1); false }
        else true
      }
    }(Encoders.row(schema)).toDF()
  }

  /** Key columns, pane N (__sx_fire), then the partials of [[FiringPartials]] over the tuples of
   *  the map task in that pane. */
  def combined(tuples: DataFrame): DataFrame = {
    val keys = spec.partitionColumns
    val read = spec.aggregates.map(_._2).filter(_ != "*").distinct.filterNot(keys.contains)
    // Event time as a long: no Timestamp object per tuple.
    val narrow = tuples.select((keys ++ read).map(c => tuples.col(s"`$c`")) :+
      expr(s"unix_micros(`${WindowSpec.EventTimeColumn}`)").as(PaneInput.MicrosColumn): _*)
    val schema = narrow.schema
    val partials = new FiringPartials(spec, schema, Nil)
    val output = StructType(keys.map(c => schema(c)) ++
      (StructField(WindowSpec.FireColumn, LongType, nullable = false) +: partials.schema))
    val (cp, conf, counted) = (checkpoint, hadoopConf, counters)
    val (panes, keyCount) = (geometry, keys.length)
    val time = schema.fieldIndex(PaneInput.MicrosColumn)
    narrow.mapPartitions { rows: Iterator[Row] =>
      val drop = PaneInput.dropPoint(BatchWatermark.current(cp, conf.value.value))
      // Partition key -> pane N -> partials.
      val open = mutable.HashMap.empty[Any, mutable.LongMap[Array[Any]]]
      rows.foreach { row =>
        if (row.isNullAt(time)) counted.notWindowed.add(1)
        else {
          val t = row.getLong(time)
          if (t < drop) counted.lateDropped.add(1)
          else {
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
        byPane.iterator.map { case (n, values) => Row.fromSeq((keyValues :+ n) ++ values) }
      }
    }(Encoders.row(output)).toDF()
  }
}

object PaneInput {
  val MicrosColumn = "__sx_emicros"

  def geometry(spec: WindowSpec): PaneSpec = PaneSpec(math.round(spec.duration * 1e6),
    math.round(spec.period * 1e6), math.round(spec.discard * 1e6), math.round(spec.offset * 1e6))

  /** SPL's drop point W - A (µs) under Spark's watermark: Spark's runs 1 ms below it
   *  (architecture.md section 3). Before the first watermark (0) SPL's W is -inf: none. */
  def dropPoint(sparkWatermarkMs: Long): Long =
    if (sparkWatermarkMs <= 0) Long.MinValue
    else (sparkWatermarkMs + PaneProcessor.BoundaryMs) * 1000L

  def micros(time: Any): Long = time match {
    case t: java.sql.Timestamp => DateTimeUtils.fromJavaTimestamp(t)
    case t: java.time.Instant => DateTimeUtils.instantToMicros(t)
  }
}

/** What a streaming table drops or cannot put in order, counted on the executors and read by
 *  SHOW STREAMS. */
final class StreamCounters(val lateDropped: LongAccumulator, val notWindowed: LongAccumulator,
    val outOfOrder: LongAccumulator) extends Serializable
