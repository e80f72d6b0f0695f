package io.sqlext.window

import io.sqlext.Contract
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * The window of one query as the Python rewriter lowered it (a JSON literal argument of the
 * `sql_ext_window` table function). Helper columns are referred to by their fixed names.
 *
 * @param policyText the policy as the user wrote it, for error messages
 * @param partitionColumns columns holding the PARTITION BY values
 * @param meta the pane-function columns the query reads (WINDOW_ID, PANE_START, ...)
 * @param aggregates streaming: (sum|count|min|max, column or "*") partial aggregates the
 *   processor computes per firing, emitted as __sx_a0, __sx_a1, ... instead of the tuples
 */
final case class WindowSpec(
    kind: String,
    policy: String,
    count: Long,
    delta: Double,
    seconds: Double,
    policyText: String,
    partitionColumns: Seq[String],
    ordered: Boolean,
    meta: Seq[String],
    trigger: String = "",
    triggerCount: Long = 0L,
    triggerDelta: Double = 0.0,
    triggerSeconds: Double = 0.0,
    partitionEviction: String = "",
    partitionEvictionValue: Double = 0.0,
    emitIncomplete: Boolean = false,
    emitEvicted: Boolean = false,
    duration: Double = 0.0,
    period: Double = 0.0,
    discard: Double = 0.0,
    offset: Double = 0.0,
    watermark: String = "",
    watermarkDelay: Double = 0.0,
    aggregates: Seq[(String, String)] = Nil,
    emitPanes: String = "",
    earlyEvery: Double = 0.0,
    lateRows: String = "",
    watermarkIdle: Double = 0.0) {

  /** The window as typed values ([[Family]]); `fromJson` parses it, so an unknown name
   *  fails there. */
  @transient lazy val family: Family = Family.parse(this)

  /** TUMBLING's policy, SLIDING's eviction and trigger; none for TIME_INTERVAL. */
  @transient lazy val policies: Seq[Policy] = family match {
    case Family.Tumbling(policy) => Seq(policy)
    case Family.Sliding(eviction, trigger) => Seq(eviction, trigger)
    case Family.TimeInterval(_) => Nil
  }

  @transient lazy val isPanes: Boolean = family.isInstanceOf[Family.TimeInterval]

  /** TIME policies replay a clock; ticks and timers need the whole input's time span. */
  @transient lazy val timeBased: Boolean = policies.exists(_.isInstanceOf[Policy.Time])

  /** The TIME policy's tick period (µs), 0 without one. */
  @transient lazy val tickPeriod: Long =
    policies.collectFirst { case Policy.Time(seconds) => Micros.period(seconds) }.getOrElse(0L)

  @transient lazy val isFilePunct: Boolean = policies.contains(Policy.FilePunct)

  /** PUNCT markers, partition eviction and watermarks act across partitions: in batch one
   *  window replays all tuples in one global arrival order. */
  @transient lazy val replaysGlobally: Boolean =
    policies.contains(Policy.MarkerPunct) || partitionEvictionPolicy.nonEmpty || isPanes

  /** Streaming runs one state machine for the whole window when its events act across
   *  partitions: marker punctuations, and PARTITION EVICTION COUNT and TUPLES (AGE is per
   *  partition). PUNCT() is per partition, as batch replays it: arrival order puts a file's
   *  tuples together ([[io.sqlext.replay.ArrivalOrder]]), so the end of a file flushes a
   *  partition right after that partition's last tuple of the file. */
  @transient lazy val actsAcrossPartitions: Boolean =
    policies.contains(Policy.MarkerPunct) ||
      partitionEvictionPolicy.exists(!_.isInstanceOf[PartitionEvictionPolicy.Age])

  /** TIME_INTERVAL: what the panes hand on (EMIT FINAL, EMIT EARLY EVERY, or every update). */
  @transient lazy val paneEmit: PaneEmit = PaneEmit.parse(emitPanes, earlyEvery)

  /** TIME_INTERVAL without a watermark: all input is present, a pure row-to-panes expansion
   *  (each pane fires once; early firings need the replay). */
  def isPaneExpansion: Boolean = family == Family.TimeInterval(Watermark.AllInput) &&
    !paneEmit.isInstanceOf[PaneEmit.Early] && !keepsLateRows

  /** LATE ROWS INTO <table>: the tuples dropped as late are written there. */
  def keepsLateRows: Boolean = lateRows.nonEmpty

  /** The one firing of each pane in the expansion: on time, or its final one (EMIT FINAL). */
  def expansionFiring: PaneFiring =
    PaneFiring(0L, if (paneEmit == PaneEmit.Final) PaneFiring.Final else PaneFiring.OnTime)

  @transient lazy val partitionEvictionPolicy: Option[PartitionEvictionPolicy] =
    partitionEviction match {
      case "" => None
      // Whole seconds, as the reference's recency list keeps them.
      case "age" => Some(PartitionEvictionPolicy.Age(partitionEvictionValue.toLong))
      case "count" => Some(PartitionEvictionPolicy.Count(partitionEvictionValue.toLong))
      case "tuples" => Some(PartitionEvictionPolicy.Tuples(partitionEvictionValue.toLong))
      case other => throw WindowSpec.unknown("partition_eviction", other)
    }

  /** TIME policies and AGE eviction read the replayed clock (the ORDER BY timestamp). */
  @transient lazy val usesClock: Boolean = timeBased ||
    partitionEvictionPolicy.exists(_.isInstanceOf[PartitionEvictionPolicy.Age])
}

object WindowSpec {
  // The helper columns, as the contract with the Python lowering names them (Contract).
  val OrderColumn: String = Contract.OrderColumn
  val SeqColumn: String = Contract.ArrivalColumn
  val DeltaColumn: String = Contract.DeltaColumn
  val TriggerDeltaColumn: String = Contract.TriggerDeltaColumn
  val EventTimeColumn: String = Contract.EventTimeColumn
  val WatermarkColumn: String = Contract.WatermarkColumn
  val PunctColumn: String = Contract.PunctColumn
  val FileColumn: String = Contract.FileColumn
  val ClockStartColumn: String = Contract.ClockStartColumn
  val ClockEndColumn: String = Contract.ClockEndColumn

  /** What the aggregation groups a window's rows by (Contract.GroupColumn), and the output
   *  column of each pane function. */
  val FireColumn: String = Contract.GroupColumn
  val MetaColumns: Map[String, String] = Contract.PaneFunctionColumns

  /** Every field of the JSON the Python rewriter writes, each read by `fromJson`. */
  val JsonFields: Seq[String] = Seq("kind", "policy", "count", "delta", "seconds",
    "policy_text", "partition_columns", "ordered", "meta", "trigger", "trigger_count",
    "trigger_delta", "trigger_seconds", "partition_eviction", "partition_eviction_value",
    "emit_incomplete", "emit_evicted", "duration", "period", "discard", "offset", "watermark",
    "watermark_delay", "aggregates", "emit_panes", "early_every", "late_rows",
    "watermark_idle")

  def unknown(field: String, value: String): IllegalArgumentException =
    new IllegalArgumentException(s"sql_ext window spec: unknown $field '$value' " +
      "(mismatched versions of the rewriter and the JVM extension?)")

  def fromJson(text: String): WindowSpec = {
    implicit val formats: Formats = DefaultFormats
    val json = JsonMethods.parse(text)
    // The contract with the rewriter: a field this side does not read is a bug, not a default.
    val unknown = json match {
      case JObject(fields) => fields.map(_._1).filterNot(JsonFields.contains)
      case _ => Nil
    }
    require(unknown.isEmpty, s"sql_ext window spec: fields ${unknown.mkString(", ")} are " +
      "written by the rewriter but not read by the JVM extension (mismatched versions?)")
    val spec = WindowSpec(
      kind = (json \ "kind").extract[String],
      policy = (json \ "policy").extractOrElse[String](""),
      count = (json \ "count").extractOrElse[Long](0L),
      delta = (json \ "delta").extractOrElse[Double](0.0),
      seconds = (json \ "seconds").extractOrElse[Double](0.0),
      policyText = (json \ "policy_text").extractOrElse[String](""),
      partitionColumns = (json \ "partition_columns").extractOrElse[Seq[String]](Nil),
      ordered = (json \ "ordered").extractOrElse[Boolean](false),
      meta = (json \ "meta").extractOrElse[Seq[String]](Nil),
      trigger = (json \ "trigger").extractOrElse[String](""),
      triggerCount = (json \ "trigger_count").extractOrElse[Long](0L),
      triggerDelta = (json \ "trigger_delta").extractOrElse[Double](0.0),
      triggerSeconds = (json \ "trigger_seconds").extractOrElse[Double](0.0),
      partitionEviction = (json \ "partition_eviction").extractOrElse[String](""),
      partitionEvictionValue = (json \ "partition_eviction_value").extractOrElse[Double](0.0),
      emitIncomplete = (json \ "emit_incomplete").extractOrElse[Boolean](false),
      emitEvicted = (json \ "emit_evicted").extractOrElse[Boolean](false),
      duration = (json \ "duration").extractOrElse[Double](0.0),
      period = (json \ "period").extractOrElse[Double](0.0),
      discard = (json \ "discard").extractOrElse[Double](0.0),
      offset = (json \ "offset").extractOrElse[Double](0.0),
      watermark = (json \ "watermark").extractOrElse[String](""),
      watermarkDelay = (json \ "watermark_delay").extractOrElse[Double](0.0),
      aggregates = (json \ "aggregates").extractOrElse[Seq[Seq[String]]](Nil)
        .map(pair => (pair.head, pair(1))),
      emitPanes = (json \ "emit_panes").extractOrElse[String](""),
      earlyEvery = (json \ "early_every").extractOrElse[Double](0.0),
      lateRows = (json \ "late_rows").extractOrElse[String](""),
      watermarkIdle = (json \ "watermark_idle").extractOrElse[Double](0.0))
    spec.family
    spec.paneEmit // typed once, here: an unknown name fails now, not mid-query
    spec.partitionEvictionPolicy
    spec
  }
}
