package io.sqlext

import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * What this extension and the Python package spell alike, read from the one definition,
 * sql_ext/sql/contract.json, which the build copies into the jar: the helper columns the
 * Python lowering adds to a window's input and reads from its output, SHOW STREAMS' columns,
 * the longest error a catalog entry keeps. tests/test_contract.py checks that Python reads the
 * same (`json`) and that both sides use it.
 */
object Contract {
  /** The contract's text, as the jar holds it. */
  val json: String = {
    val in = getClass.getResourceAsStream("/io/sqlext/contract.json")
    require(in != null, "io/sqlext/contract.json is missing from the sql-ext jar")
    try new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8) finally in.close()
  }

  private implicit val formats: Formats = DefaultFormats
  private val parsed = JsonMethods.parse(json)
  private def input(name: String): String = (parsed \ "input_columns" \ name).extract[String]
  private def pane(name: String): String =
    (parsed \ "pane_function_columns" \ name).extract[String]

  /** Every helper column starts so; the JVM's own internal columns too. */
  val HelperPrefix: String = (parsed \ "helper_prefix").extract[String]

  val OrderColumn: String = input("order")
  val ArrivalColumn: String = input("arrival")
  val DeltaColumn: String = input("delta")
  val TriggerDeltaColumn: String = input("trigger_delta")
  val EventTimeColumn: String = input("event_time")
  val WatermarkColumn: String = input("watermark")
  val PunctColumn: String = input("punct")
  val FileColumn: String = input("file")
  val ClockStartColumn: String = input("clock_start")
  val ClockEndColumn: String = input("clock_end")

  /** What the aggregation groups a window's rows by within a partition: a firing's number for
   *  TUMBLING and SLIDING, a pane's number for TIME_INTERVAL (a pane's firings are told
   *  apart by the pane-index column). */
  val GroupColumn: String = (parsed \ "group_column").extract[String]

  /** The relation a lowered query's aggregation reads the window's firings from. */
  val SourceAlias: String = (parsed \ "source_alias").extract[String]

  /** The relation a pipeline's window query reads its source from (FROM and JOINs). */
  val TuplesAlias: String = (parsed \ "tuples_alias").extract[String]

  /** A Python UDAF's batched form is a session function named so (+ the UDAF's name). */
  val UdafBatchedPrefix: String = (parsed \ "udaf_batched_prefix").extract[String]

  /** Pane function (lower case, as the spec's `meta` lists it) -> its output column. */
  val PaneFunctionColumns: Map[String, String] =
    (parsed \ "pane_function_columns").extract[Map[String, String]]
  val WindowIdColumn: String = pane("window_id")
  val PaneStartColumn: String = pane("pane_start")
  val PaneEndColumn: String = pane("pane_end")
  val PaneTimingColumn: String = pane("pane_timing")
  val PaneIndexColumn: String = pane("pane_index")
  val WindowEventColumn: String = pane("window_event")

  private val partitionPrefix = (parsed \ "numbered_columns" \ "partition").extract[String]
  private val aggregatePrefix = (parsed \ "numbered_columns" \ "aggregate").extract[String]
  private val positionalPrefix =
    (parsed \ "numbered_columns" \ "positional_parameter").extract[String]
  def partitionColumn(i: Int): String = s"$partitionPrefix$i"
  /** The i of a rewritten statement's `:<prefix><i>`, its i-th positional parameter `?`. */
  def positionalParameterIndex(name: String): Option[Int] =
    Option(name).filter(_.startsWith(positionalPrefix))
      .flatMap(_.stripPrefix(positionalPrefix).toIntOption)
  def aggregateColumn(i: Int): String = s"$aggregatePrefix$i"

  val ShowStreamsColumns: Seq[String] =
    (parsed \ "show_streams_columns").extract[Seq[String]]
  val ShortErrorLimit: Int = (parsed \ "short_error_limit").extract[Int]
  /** The catalog property that holds a streaming table's checkpoint (its folder is the
   *  table's, as its location is). */
  val StreamCheckpointProperty: String = (parsed \ "stream_checkpoint_property").extract[String]
}
