package io.sqlext.streaming

import io.sqlext.SqlExtErrors
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.{DataFrame, Encoders, Row}
import org.apache.spark.sql.functions.{array, explode, expr}
import org.apache.spark.sql.streaming.{OutputMode, TimeMode}
import org.apache.spark.sql.types._

/**
 * Streaming entry point, called from Python: turns the windowed query's input stream (helper
 * columns computed) into the stream of firings, each tuple of a firing tagged as in batch.
 */
object StreamingWindows {

  def firings(input: DataFrame, specJson: String): DataFrame = {
    val spec = WindowSpec.fromJson(specJson)
    if (!spec.isPanes) {
      throw SqlExtErrors.analysis(s"${spec.policyText}: streaming runs TIME_INTERVAL windows " +
        "so far; streaming TUMBLING and SLIDING windows are not supported yet")
    }
    input.schema.find(_.name == WindowSpec.EventTimeColumn).map(_.dataType) match {
      case Some(TimestampType) =>
      case other => throw SqlExtErrors.analysis(s"${spec.policyText}: a streaming " +
        s"TIME_INTERVAL needs a TIMESTAMP event time (ON ...), got ${other.map(_.simpleString)}")
    }
    // Spark's watermark is the SPL watermark minus the discard age, less 1 ms (Spark drops
    // tuples at its watermark, SPL only below W - discard).
    val delayMs = math.round((spec.watermarkDelay + spec.discard) * 1000) +
      PaneProcessor.BoundaryMs
    val panes = expandToPanes(input.withWatermark(WindowSpec.EventTimeColumn,
      s"$delayMs milliseconds"), spec)
    val schema = panes.schema
    val keyIndexes = (spec.partitionColumns :+ WindowSpec.FireColumn).map(schema.fieldIndex)
    val keySchema = StructType(keyIndexes.map(schema.fields))
    val metaNames = spec.meta.distinct.map(WindowSpec.MetaColumns)
    val output = metaNames.foldLeft(schema) { (s, name) =>
      s.add(name, metaType(name), nullable = true)
    }
    val java8Time = input.sparkSession.conf.get("spark.sql.datetime.java8API.enabled") == "true"
    panes
      .groupByKey((row: Row) => Row.fromSeq(keyIndexes.map(row.get)))(Encoders.row(keySchema))
      .transformWithState(new PaneProcessor(spec, schema, metaNames, java8Time),
        TimeMode.EventTime(), OutputMode.Append())(Encoders.row(output))
      .toDF()
  }

  /** Each tuple once per pane containing it, N in __sx_fire: exact integer arithmetic on
   *  microseconds, as the batch expansion (ExpandPanes) does. */
  private def expandToPanes(input: DataFrame, spec: WindowSpec): DataFrame = {
    def micros(seconds: Double): Long = math.round(seconds * 1e6)
    val (duration, period, offset) =
      (micros(spec.duration), micros(spec.period), micros(spec.offset))
    val time = s"unix_micros(`${WindowSpec.EventTimeColumn}`)"
    val last = s"(($time - $offset) - pmod($time - $offset, $period)) div $period"
    val copies = ((duration + period - 1) / period).toInt
    input
      .withColumn(WindowSpec.FireColumn, explode(array((0 until copies).map(i =>
        expr(s"$last - $i")): _*)))
      .where(expr(s"`${WindowSpec.FireColumn}` * $period + $offset + $duration > $time"))
  }

  private def metaType(name: String): DataType = name match {
    case "__sx_pstart" | "__sx_pend" => TimestampType
    case "__sx_timing" | "__sx_event" => StringType
    case _ => LongType
  }
}
