package io.sqlext

import io.sqlext.access.{AccessChecks, ApplyRowPolicies, HideHiddenColumns, HideUnreadableTables,
  RemoveServerReads, RowPolicies, RowPolicyStrategy}
import io.sqlext.analysis.{KafkaTables, PipelineWindowFunction, ProcessFunctions,
  ResolvePipelineWindows, TimeoutCeiling, WindowTableFunction}
import io.sqlext.kafka.KafkaUndecodable
import io.sqlext.execution.WindowStrategy
import io.sqlext.expressions.ArrivalSequence
import io.sqlext.optimizer.{ExpandPanes, IncrementalWindowAggregate}
import io.sqlext.parser.RewritingParser
import io.sqlext.replay.RankArrival
import io.sqlext.streaming.catalog.WindowState
import org.apache.spark.sql.SparkSessionExtensions

/** Entry point (`spark.sql.extensions=io.sqlext.SqlExtExtensions`); it only wires. */
class SqlExtExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    // Parsing: windowed SQL that Spark rejects is lowered by the Python rewriter.
    extensions.injectParser((session, delegate) => new RewritingParser(session, delegate))
    // Analysis: the rewriter's target, sql_ext_window(TABLE(...), spec), becomes WindowAssign.
    extensions.injectTableFunction(WindowTableFunction.registration)
    // Analysis: a declarative pipeline's windowed query, sql_ext_pipeline_window(TABLE(...),
    // window), is resolved once the pipeline has resolved its datasets.
    extensions.injectTableFunction(PipelineWindowFunction.registration)
    extensions.injectResolutionRule(session => ResolvePipelineWindows(session))
    // Analysis: CREATE TABLE t (<columns>) USING kafka is a Kafka topic of those columns, and
    // kafka_undecodable('<table>') its messages that do not decode (spec 9).
    extensions.injectResolutionRule(_ => KafkaTables)
    extensions.injectTableFunction(KafkaUndecodable.registration)
    // Analysis: window_state('<streaming table>') reads a stream's window state (spec 8).
    extensions.injectTableFunction(WindowState.registration)
    // Analysis: a server's statement timeout is a ceiling that a session's SET cannot raise.
    extensions.injectCheckRule(session => TimeoutCeiling(session))
    // Analysis: a signed-in user who is not an admin reaches no JVM method, code, setting or
    // path beyond what the server's operator allowed.
    extensions.injectCheckRule(session => AccessChecks(session))
    // Analysis: with access rules, SHOW TABLES lists a user only the tables they may read.
    extensions.injectPostHocResolutionRule(session => HideUnreadableTables(session))
    // Analysis: with access rules, a user reads a table through its rule's row filter and
    // column masks, in every plan shape, before any check or optimization sees the plan.
    extensions.injectPostHocResolutionRule(session => RowPolicies(session))
    // Analysis: with access rules, DESCRIBE and SHOW COLUMNS list no column a rule hides.
    extensions.injectPostHocResolutionRule(session => HideHiddenColumns(session))
    // Analysis: sql_ext_arrival() and sql_ext_arrival_file(), a row's place in source order.
    ArrivalSequence.registrations.foreach(extensions.injectFunction)
    // Analysis: Python UDAFs shared later reach every session made after (JDBC connections).
    ProcessFunctions.remember(extensions)
    // Optimization: a read the server makes for a user (window_state()'s of a checkpoint) is
    // marked for the access checks until analysis ends; from here on it is its plain read.
    extensions.injectOptimizerRule(_ => RemoveServerReads)
    // Optimization: the row filters and column masks as the access rules say now (a stream's
    // next micro-batch applies a changed rule).
    extensions.injectOptimizerRule(session => ApplyRowPolicies(session))
    // Optimization: TIME_INTERVAL without a watermark becomes a generated Filter(Expand).
    extensions.injectOptimizerRule(session => ExpandPanes(session.sparkContext))
    // Optimization: sliding windows with incremental aggregates emit one row per firing.
    extensions.injectOptimizerRule(_ => IncrementalWindowAggregate)
    // Planning: WindowAssign runs as WindowAssignExec, WindowAggregate as WindowAggregateExec.
    extensions.injectPlannerStrategy(_ => WindowStrategy)
    // Planning: a table read through its access rule is a projection over the filtered rows.
    extensions.injectPlannerStrategy(_ => RowPolicyStrategy)
    // Physical: sql_ext_arrival() learns the source order of the splits of its scan.
    extensions.injectColumnar(_ => RankArrival.AsColumnarRule)
  }
}
