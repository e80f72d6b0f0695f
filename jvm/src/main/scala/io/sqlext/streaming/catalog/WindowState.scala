package io.sqlext.streaming.catalog

import io.sqlext.Contract
import io.sqlext.SqlExtErrors
import io.sqlext.access.{AccessChecks, ServerRead}
import io.sqlext.aggregate.PartialAggregates
import io.sqlext.streaming.time.{BatchWatermark, SplWatermark}
import io.sqlext.window.{Family, PaneSpec, Watermark, WindowSpec}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo, Literal}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * `SELECT * FROM window_state('<streaming table>')` (spec/sql.md section 8): what the stream's
 * windows hold now, one row per partition key and window (TUMBLING/SLIDING) or open pane
 * (TIME_INTERVAL), read from the checkpoint's last committed state with Spark's state data
 * source:
 *
 *   partition   the PARTITION BY values, named as written (NULL without PARTITION BY)
 *   window_id   the window's number (WINDOW_ID()): the pane N, or the partition's firings so far
 *   pane_start, pane_end   a pane's bounds (TIME_INTERVAL)
 *   tuples      the tuples held (NULL where the window keeps partial aggregates instead)
 *   partials    the partial aggregates kept, as JSON ({"sum(v)": 12.0, ...})
 *   state       the trigger and eviction state, as JSON (a pane's complete/fresh/firings; a
 *               sliding window's full/counter/reference; the recency rank under eviction)
 *   watermark   the SPL watermark (TIME_INTERVAL)
 *   next_timer  when the partition's timer fires: the watermark (event time) a pane waits for,
 *               or the wall-clock time of a TIME tick or an AGE eviction
 *
 * The window is read as the stream planned it (the table's `sql_ext.stream.window` property,
 * written at each start), so state written by this version of the extension reads back.
 */
object WindowState {
  val Name = "window_state"
  private val WindowProperty = "sql_ext.stream.window"

  val info = new ExpressionInfo(getClass.getCanonicalName, null, Name,
    "_FUNC_('<streaming table>') - what the streaming table's windows hold now.",
    "", "", "", "table_funcs", "", "", "")

  def builder(args: Seq[Expression]): LogicalPlan = args match {
    case Seq(Literal(name, StringType)) if name != null =>
      // The checkpoint's files are the stream's table's: the server reads them for a user the
      // table's rule lets read it (checkReadable), which the checks of the files do not judge.
      val session = SparkSession.active
      checkReadable(session, name.toString)
      ServerRead.of(read(session, name.toString).queryExecution.analyzed)
    case _ => throw SqlExtErrors.analysis("SQL_EXT_WRONG_TABLE_KIND",
      s"$Name takes the name of a streaming table as a string: $Name('<streaming table>')")
  }

  val registration = (FunctionIdentifier(Name), info, builder _)

  /** The stream's state is its table's rows to come: a user reads it only where they may read
   *  the table, and not where its rule filters or masks it (its plan reads the checkpoint, not
   *  the table, so the statement check does not). */
  private def checkReadable(session: SparkSession, name: String): Unit =
    Option(AccessChecks.windowStateRefusal(session, name))
      .foreach(refusal => throw SqlExtErrors.analysis("SQL_EXT_ACCESS_DENIED", refusal))

  /** The window state of the streaming table `name` (as a name in SQL: db.table, quoted). */
  def read(session: SparkSession, name: String): DataFrame = {
    val ident = session.sessionState.sqlParser.parseTableIdentifier(name)
    val db = ident.database.getOrElse(session.catalog.currentDatabase)
    val props = StreamCatalog.properties(session, db, ident.table)
    if (props.isEmpty) throw SqlExtErrors.analysis("SQL_EXT_WRONG_TABLE_KIND",
      s"$Name('$name'): $db.${ident.table} is not a streaming table")
    val window = Option(props.get(WindowProperty)).getOrElse(throw SqlExtErrors.analysis(
      "SQL_EXT_WRONG_TABLE_KIND", s"$Name('$name'): the stream has not started since its " +
      "window was recorded; start it (REFRESH STREAMING TABLE) first"))
    implicit val formats: Formats = DefaultFormats
    val json = JsonMethods.parse(window)
    val spec = WindowSpec.fromJson(JsonMethods.compact(json \ "spec"))
    val partitions = (json \ "partitions").extract[Seq[String]]
    val checkpoint = BatchWatermark.qualified(session, props.get(Contract.StreamCheckpointProperty))
    new WindowState(session, spec, partitions, checkpoint).frame
  }

  val Schema: StructType = new StructType()
    .add("window_id", LongType).add("pane_start", TimestampType).add("pane_end", TimestampType)
    .add("tuples", LongType).add("partials", StringType).add("state", StringType)
    .add("watermark", TimestampType).add("next_timer", TimestampType)
}

private class WindowState(session: SparkSession, spec: WindowSpec, partitions: Seq[String],
    checkpoint: String) {

  private lazy val geometry = PaneSpec.of(spec)

  /** The state rows, or none before the stream's first committed micro-batch. */
  def frame: DataFrame = {
    session.streams // the state store coordinator the reader needs lives with the query manager
    val committed = new org.apache.hadoop.fs.Path(checkpoint, "commits")
    val fs = committed.getFileSystem(session.sessionState.newHadoopConf())
    if (!fs.exists(committed) || fs.listStatus(committed).forall(_.getPath.getName.startsWith(".")))
      return empty
    spec.family match {
      case Family.TimeInterval(Watermark.ByMarkers) => markerPanes
      case Family.TimeInterval(_) if spec.aggregates.nonEmpty => paneSummaries
      case Family.TimeInterval(_) => paneTuples
      case _ if spec.actsAcrossPartitions => wholeWindow
      case _ => partitionWindows
    }
  }

  private def stateVar(name: String): DataFrame =
    session.read.format("statestore").option("stateVarName", name).load(checkpoint)

  /** Tuples per key of the packed `held` state
   *  ([[io.sqlext.streaming.input.PackedTuples.hold]]); None for a checkpoint that has none
   *  (last run before tuples were packed). */
  private def heldCounts: Option[DataFrame] = {
    val held = try stateVar("held") catch {
      case scala.util.control.NonFatal(_) => return None // not defined in that checkpoint
    }
    val tuples = udf((bytes: Array[Byte]) => io.sqlext.replay.PackFormat.count(bytes))
    Some(held.select(col("key"), tuples(col("value.value")).cast(LongType).as("tuples")))
  }

  private def timers: DataFrame =
    session.read.format("statestore").option("readRegisteredTimers", "true").load(checkpoint)
      .groupBy("key").agg(min("expiration_timestamp_ms").as("timer_ms"))

  /** The partition struct, fields named as written, from the key columns __sx_p0, ... */
  private def partition(key: Column): Column =
    if (partitions.isEmpty) lit(null).cast(new StructType()).as("partition")
    else struct(partitions.indices.map(i => key.getField(Contract.partitionColumn(i)).as(partitions(i))): _*)
      .as("partition")

  private def paneBounds(n: Column): Seq[Column] = Seq(
    timestamp_micros(n * geometry.period + geometry.offset).as("pane_start"),
    timestamp_micros(n * geometry.period + geometry.offset + geometry.duration).as("pane_end"))

  /** SPL's watermark now: the last micro-batch's, W under Spark's (DELAY). */
  private def splWatermark: Column = {
    val sparkMs = BatchWatermark.latest(checkpoint)
    val w = SplWatermark(geometry).of(sparkMs)
    if (w == Long.MinValue) lit(null).cast(TimestampType) else timestamp_micros(lit(w))
  }

  /** An event-time timer (Spark's watermark, ms) as the SPL watermark it waits for. */
  private def paneTimer(ms: Column): Column = when(ms >= 0, timestamp_micros(
    (ms + SplWatermark.BoundaryMs) * 1000L + geometry.discard))

  private def paneState(p: Column): Column = to_json(struct(
    (Seq("complete", "fresh", "firings") ++
      (if (spec.paneEmit.isInstanceOf[io.sqlext.window.PaneEmit.Early]) Seq("early_at") else Nil))
      .map(f => p.getField(f).as(f)): _*))

  /** A pane's partials (`pane`'s fields __sx_a0, __sx_a1, ...), labelled by aggregate. */
  private def partialsJson(p: Column, pane: StructType): Column = {
    val labels = spec.aggregates.foldLeft(Seq.empty[String]) { case (done, (function, column)) =>
      val first = pane.find(_.name == Contract.aggregateColumn(done.length)).map(_.dataType)
      done ++ PartialAggregates.partialLabels(function, column, first)
    }
    to_json(struct(labels.zipWithIndex.map { case (label, j) =>
      p.getField(Contract.aggregateColumn(j)).as(label)
    }: _*))
  }

  /** TIME_INTERVAL with partials: one state value per key holding all its open panes. */
  private def paneSummaries: DataFrame = {
    val panes = stateVar("key_panes")
      .select(col("key"), col("value.wake").as("wake"), explode(col("value.panes")).as("p"))
    shaped(panes.select(Seq(partition(col("key")), col("p.n").as("window_id")) ++
      paneBounds(col("p.n")) ++ Seq(lit(null).cast(LongType).as("tuples"),
      partialsJson(col("p"), panes.schema("p").dataType.asInstanceOf[StructType])
        .as("partials"), paneState(col("p")).as("state"),
      splWatermark.as("watermark"), paneTimer(col("wake")).as("next_timer")): _*))
  }

  /** TIME_INTERVAL holding tuples: a state per (key, pane), its tuples as a list. */
  private def paneTuples: DataFrame = {
    val flags = stateVar("pane")
    val counts = stateVar("tuples").groupBy("key").agg(count(lit(1)).as("tuples"))
    val n = col("key").getField(WindowSpec.FireColumn)
    shaped(flags.join(counts, Seq("key"), "left").join(timers, Seq("key"), "left")
      .select(Seq(partition(col("key")), n.as("window_id")) ++ paneBounds(n) ++ Seq(
        col("tuples"), lit(null).cast(StringType).as("partials"),
        paneState(col("value")).as("state"), splWatermark.as("watermark"),
        paneTimer(col("timer_ms")).as("next_timer")): _*))
  }

  /** WATERMARK BY: one state machine; its parts keyed by (pane, partition). */
  private def markerPanes: DataFrame = {
    val watermark = stateVar("clock").select(col("value.watermark").as("w"))
    val n = col("user_map_key.__sx_pane")
    shaped(stateVar("parts").crossJoin(watermark).select(Seq(partition(col("user_map_key")),
      n.as("window_id")) ++ paneBounds(n) ++ Seq(
        size(col("user_map_value.tuples")).cast(LongType).as("tuples"),
        lit(null).cast(StringType).as("partials"), paneState(col("user_map_value")).as("state"),
        when(col("w") > Long.MinValue, timestamp_micros(col("w"))).as("watermark"),
        lit(null).cast(TimestampType).as("next_timer")): _*))
  }

  /** TUMBLING/SLIDING per partition: its tuples (packed, or a list in checkpoints written
   *  before they were packed) and its policy state. */
  private def partitionWindows: DataFrame = {
    val listed = stateVar("tuples").groupBy("key").agg(count(lit(1)).as("tuples"))
    val counts = heldCounts.map(listed.unionByName(_)).getOrElse(listed)
    val policy = stateVar("policy")
    val keyed = if (spec.usesClock) policy.join(timers, Seq("key"), "left")
      else policy.withColumn("timer_ms", lit(null).cast(LongType))
    shaped(keyed.join(counts, Seq("key"), "left").select(partition(col("key")),
      col("value.firings").as("window_id"), lit(null).cast(TimestampType).as("pane_start"),
      lit(null).cast(TimestampType).as("pane_end"), coalesce(col("tuples"), lit(0L)).as("tuples"),
      lit(null).cast(StringType).as("partials"),
      to_json(struct(Seq("full", "counter", "reference").map(f => col(s"value.$f").as(f)) :+
        size(col("value.stamps")).as("stamps"): _*)).as("state"),
      lit(null).cast(TimestampType).as("watermark"),
      timestamp_millis(col("timer_ms")).as("next_timer")))
  }

  /** One state machine for the whole window (PUNCT markers, eviction by count or tuples). */
  private def wholeWindow: DataFrame = {
    val value = col("user_map_value")
    shaped(stateVar("partitions").select(partition(col("user_map_key")),
      value.getField("firings").as("window_id"), lit(null).cast(TimestampType).as("pane_start"),
      lit(null).cast(TimestampType).as("pane_end"),
      size(value.getField("tuples")).cast(LongType).as("tuples"),
      lit(null).cast(StringType).as("partials"),
      to_json(struct(Seq("full", "counter", "reference", "rank", "last_insert")
        .map(f => value.getField(f).as(f)): _*)).as("state"),
      lit(null).cast(TimestampType).as("watermark"),
      lit(null).cast(TimestampType).as("next_timer")))
  }

  private def shaped(frame: DataFrame): DataFrame =
    frame.orderBy(col("partition"), col("window_id"))

  private def empty: DataFrame = {
    val partitionType = if (partitions.isEmpty) new StructType()
      else StructType(partitions.map(StructField(_, StringType)))
    session.createDataFrame(java.util.Collections.emptyList[org.apache.spark.sql.Row](),
      StructType(StructField("partition", partitionType) +: WindowState.Schema.fields))
  }
}
