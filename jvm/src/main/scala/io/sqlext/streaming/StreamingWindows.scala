package io.sqlext.streaming

import io.sqlext.Contract
import io.sqlext.SqlExtErrors
import io.sqlext.aggregate.PartialAggregates
import io.sqlext.replay.LateRows
import io.sqlext.streaming.catalog.{StreamCounters, StreamProgress}
import io.sqlext.streaming.delta.LateRowFiles
import io.sqlext.streaming.input.{FilePunctInput, FiringPartials, PackedTuples, PaneInput}
import io.sqlext.streaming.processors.{FilePunctProcessor, MarkerPaneProcessor,
  PanePartialsProcessor, PaneProcessor, WholeWindowProcessor, WindowProcessor}
import io.sqlext.streaming.time.{BatchWatermark, IdleClock, IdleClockSource, SplWatermark}
import io.sqlext.window.{Family, Watermark, WindowSpec}
import org.apache.spark.sql.{DataFrame, Encoders, KeyValueGroupedDataset, Row}
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.streaming.{OutputMode, TimeMode}
import org.apache.spark.sql.types._
import org.apache.spark.util.SerializableConfiguration

/**
 * Streaming entry point, called from Python: turns the windowed query's input stream (helper
 * columns computed) into the stream of firings, each tuple of a firing tagged as in batch.
 */
object StreamingWindows {

  /** The grouping key of a window that runs as one state machine (one key, Row(0)). */
  private val WholeWindowKey = new StructType().add("__sx_all", IntegerType)

  /** `checkpoint`: the streaming table's, where panes read each micro-batch's watermark;
   *  `lateLocation`: the folder of the LATE ROWS INTO table (null for a plan that only gives
   *  the firings' columns). */
  def firings(input: DataFrame, specJson: String, checkpoint: String, lateLocation: String)
      : DataFrame = {
    val spec = WindowSpec.fromJson(specJson)
    if (spec.isPanes) panes(input, spec, checkpoint, Option(lateLocation))
    else partitions(input, spec, StreamProgress.counters(input.sparkSession, checkpoint))
  }

  /**
   * A declarative pipeline's windowed flow: the firings of the window over `input`, each one
   * row of its partial aggregates (the pipeline appends what the query above projects of
   * them). The pipeline gives the query its checkpoint; tasks find it when they run
   * ([[BatchWatermark.QueryOwn]]).
   */
  def ofPipeline(input: DataFrame, specJson: String): DataFrame = {
    val spec = WindowSpec.fromJson(specJson)
    val ansi = input.sparkSession.sessionState.conf.ansiEnabled
    val without = spec.aggregates.filter { case (function, column) =>
      val inputType = Option.when(column != "*")(input.schema(column).dataType)
      PartialAggregates.of(function, inputType, distinct = false, filtered = false, ansi).isEmpty
    }
    if (spec.aggregates.isEmpty || without.nonEmpty) {
      val named = without.map { case (f, c) =>
        s"${f.toUpperCase}($c) of ${input.schema(c).dataType.sql}" }.mkString(", ")
      throw SqlExtErrors.analysis("SQL_EXT_UNSUPPORTED_WINDOW",
        s"${spec.policyText}: inside a declarative pipeline a " +
        "windowed streaming table hands on one row per firing, so its aggregates are COUNT, " +
        "and SUM, AVG, MIN, MAX of integer or floating-point values" +
        (if (named.nonEmpty) s", not $named" else "") + ". Define the result as a " +
        "MATERIALIZED VIEW, or as a sql-ext streaming table outside the pipeline")
    }
    if (spec.isPanes) panes(input, spec, BatchWatermark.QueryOwn, None)
    else partitions(input, spec, StreamProgress.counters(input.sparkSession,
      BatchWatermark.QueryOwn))
  }

  /** LATE ROWS INTO: the late table's columns for the window's input `input`, as JSON. */
  def lateRowsSchema(input: DataFrame): String = lateRowsType(input).json

  private def lateRowsType(input: DataFrame): StructType =
    LateRows.schema(input.schema, TimestampType, TimestampType)

  /** TUMBLING and SLIDING: one state machine per partition key, or one for the whole window
   *  when its events act across partitions (punctuations, PARTITION EVICTION COUNT/TUPLES);
   *  TUMBLING PUNCT() over partial aggregates in file order: per-file partials. */
  private def partitions(input: DataFrame, spec: WindowSpec, counters: StreamCounters)
      : DataFrame = {
    val schema = input.schema
    val keyIndexes = spec.partitionColumns.map(schema.fieldIndex)
    // An unpartitioned window is one partition; Spark's grouping needs a key column for it.
    val keySchema = if (keyIndexes.isEmpty) WholeWindowKey
      else StructType(keyIndexes.map(schema.fields))
    val metaNames = WindowSpec.FireColumn +: spec.meta.distinct.map(WindowSpec.MetaColumns)
    val firingColumns = metaNames.map(name =>
      StructField(name, metaType(spec, name, schema), nullable = true))
    // With partial aggregates a firing is one row (its key, its columns, the partials), else
    // every tuple followed by the firing's columns.
    val output = if (FiringPartials.enabled(spec)) {
      StructType(spec.partitionColumns.map(c => schema(c)) ++ firingColumns ++
        new FiringPartials(spec, schema).schema)
    } else StructType(schema.fields ++ firingColumns)
    if (FilePunctInput.applies(spec, schema)) {
      val combined = FilePunctInput.combined(input, spec)
      return grouped(combined, spec.partitionColumns)
        .transformWithState(new FilePunctProcessor(spec, schema, metaNames,
          spec.partitionColumns.length + 1), TimeMode.None(), OutputMode.Append())(
          Encoders.row(output))
        .toDF()
    }
    // Processing-time mode makes Spark run a batch on every trigger, data or not: only TIME
    // policies and AGE eviction, which need its timers, pay for it.
    val timeMode = if (spec.usesClock) TimeMode.ProcessingTime() else TimeMode.None()
    val tuples = if (spec.usesClock) withHeartbeat(input) else input
    val packing = new PackedTuples(schema, spec.partitionColumns)
    val packed = packing.pack(tuples)
    if (spec.actsAcrossPartitions) {
      grouped(packed, Nil)
        .transformWithState(new WholeWindowProcessor(spec, schema, keySchema, metaNames,
          counters, packing),
          timeMode, OutputMode.Append())(Encoders.row(output))
        .toDF()
    } else {
      grouped(packed, spec.partitionColumns)
        .transformWithState(new WindowProcessor(spec, schema, metaNames, counters, packing),
          timeMode, OutputMode.Append())(Encoders.row(output))
        .toDF()
    }
  }

  private def panes(input: DataFrame, spec: WindowSpec, checkpoint: String,
      lateLocation: Option[String]): DataFrame = {
    input.schema.find(_.name == WindowSpec.EventTimeColumn).map(_.dataType) match {
      case Some(TimestampType) =>
      case other => throw SqlExtErrors.analysis("SQL_EXT_UNSUPPORTED_WINDOW",
        s"${spec.policyText}: a streaming " +
        s"TIME_INTERVAL needs a TIMESTAMP event time (ON ...), got " +
        other.map(_.simpleString.toUpperCase(java.util.Locale.ROOT)).getOrElse("none"))
    }
    val session = input.sparkSession
    val java8Time = session.conf.get("spark.sql.datetime.java8API.enabled") == "true"
    val counters = StreamProgress.counters(session, checkpoint)
    val paneInput = new PaneInput(spec, BatchWatermark.qualified(session, checkpoint),
      session.sparkContext.broadcast(
        new SerializableConfiguration(session.sessionState.newHadoopConf())),
      counters, lateLocation.filter(_ => spec.keepsLateRows).map(location =>
        LateRowFiles.forStream(session, checkpoint, location, lateRowsType(input))))
    if (spec.family == Family.TimeInterval(Watermark.ByMarkers)) {
      return markerPanes(input, spec, java8Time, counters, paneInput)
    }
    // Spark's watermark is the SPL watermark minus the discard age, less 1 ms (architecture.md
    // section 3); late tuples are dropped by PaneInput under the batch's own watermark.
    val delayMs = SplWatermark.delayMs(spec.watermarkDelay, spec.discard)
    val watermarked = if (spec.watermarkIdle <= 0) {
      input.withWatermark(WindowSpec.EventTimeColumn, s"$delayMs milliseconds")
    } else idleClocked(input, spec, delayMs, BatchWatermark.qualified(session, checkpoint))
    val metaNames = spec.meta.distinct.map(WindowSpec.MetaColumns)
    if (FiringPartials.enabled(spec)) {
      // Partials per map task and pane; each pane's cross the shuffle, keyed by partition.
      val combined = paneInput.combined(watermarked)
      val schema = combined.schema
      val keyCount = spec.partitionColumns.length
      val output = StructType(schema.fields.take(keyCount + 1) ++
        metaNames.map(name => StructField(name, metaType(spec, name, watermarked.schema))) ++
        new FiringPartials(spec, watermarked.schema).schema)
      grouped(combined, spec.partitionColumns)
        .transformWithState(new PanePartialsProcessor(spec, watermarked.schema, metaNames,
          java8Time), TimeMode.EventTime(), OutputMode.Append())(Encoders.row(output))
        .toDF()
    } else {
      val panes = paneInput.expanded(watermarked)
      val schema = panes.schema
      val output = metaNames.foldLeft(schema) { (s, name) =>
        s.add(name, metaType(spec, name, schema), nullable = true)
      }
      grouped(panes, spec.partitionColumns :+ WindowSpec.FireColumn)
        .transformWithState(new PaneProcessor(spec, schema, metaNames, java8Time),
          TimeMode.EventTime(), OutputMode.Append())(Encoders.row(output))
        .toDF()
    }
  }

  /**
   * WATERMARK DELAY d IDLE t: the input and the rows of an [[IdleClock]], whose event times
   * move Spark's watermark while the input is idle. [[PaneInput]] drops them (column
   * __sx_beat): a filter right after the watermark would not do, Spark's optimizer pushes it
   * below the watermark and prunes the clock's branch of the union.
   */
  private def idleClocked(input: DataFrame, spec: WindowSpec, delayMs: Long,
      checkpoint: String): DataFrame = {
    val beat = IdleClock.BeatColumn
    val clock = input.sparkSession.readStream.format(classOf[IdleClockSource].getName)
      .option("idleMs", math.round(spec.watermarkIdle * 1000).toString)
      .option("delayMs", delayMs.toString).option("checkpoint", checkpoint).load()
      .select(input.schema.fields.map { f =>
        if (f.name == WindowSpec.EventTimeColumn) col("event_time").as(f.name)
        else lit(null).cast(f.dataType).as(f.name)
      }.toIndexedSeq :+ lit(true).as(beat): _*)
    input.withColumn(beat, lit(false)).unionByName(clock)
      .withWatermark(WindowSpec.EventTimeColumn, s"$delayMs milliseconds")
  }

  /** WATERMARK BY: markers act across partitions and between tuples, so one state machine
   *  replays each micro-batch in arrival order ([[MarkerPaneProcessor]]). */
  private def markerPanes(input: DataFrame, spec: WindowSpec, java8Time: Boolean,
      counters: StreamCounters, paneInput: PaneInput): DataFrame = {
    val metaNames = WindowSpec.FireColumn +: spec.meta.distinct.map(WindowSpec.MetaColumns)
    val output = StructType(input.schema.fields ++ metaNames.map(name =>
      StructField(name, metaType(spec, name, input.schema), nullable = true)))
    grouped(input, Nil)
      .transformWithState(new MarkerPaneProcessor(spec, input.schema, metaNames, java8Time,
        counters, paneInput), TimeMode.None(), OutputMode.Append())(
        Encoders.row(output))
      .toDF()
  }

  /**
   * The input and a once-a-second heartbeat whose rows never reach the window. After a
   * restart Spark runs no micro-batch until a source has new data, so without it a TIME tick or
   * an AGE eviction that fell due while the query was down would wait for the next tuple;
   * the heartbeat's new offsets start a batch, whose timers then fire.
   */
  private def withHeartbeat(input: DataFrame): DataFrame = {
    val beats = input.sparkSession.readStream.format("rate").option("rowsPerSecond", "1").load()
      .where(lit(false))
      .select(input.schema.fields.map(f => lit(null).cast(f.dataType).as(f.name)).toIndexedSeq
        : _*)
    input.union(beats)
  }

  /** The input grouped by `columns` (Spark's own grouping: no conversion of each row to a Row
   *  to find its key), or under one constant key without columns. */
  private def grouped(input: DataFrame, columns: Seq[String]): KeyValueGroupedDataset[Row, Row] =
    if (columns.isEmpty) input.groupByKey((_: Row) => Row(0))(Encoders.row(WholeWindowKey))
    else input.groupBy(columns.map(c => input.col(s"`$c`")): _*).as[Row, Row](
      Encoders.row(StructType(columns.map(c => input.schema(c)))), Encoders.row(input.schema))

  /** Pane bounds are timestamps; a tumbling or sliding window's are arrival (ORDER BY) values. */
  private def metaType(spec: WindowSpec, name: String, input: StructType): DataType = name match {
    case Contract.PaneStartColumn | Contract.PaneEndColumn if spec.isPanes => TimestampType // the event time's
    case Contract.PaneStartColumn | Contract.PaneEndColumn => input.find(_.name == WindowSpec.OrderColumn)
      .map(_.dataType).getOrElse(TimestampType)
    case Contract.PaneTimingColumn | Contract.WindowEventColumn => StringType
    case _ => LongType
  }
}
