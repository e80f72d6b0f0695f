package io.sqlext.parser

import io.sqlext.{Contract, SqlExtErrors}
import io.sqlext.access.AccessChecks
import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParseException, ParserInterface}
import io.sqlext.commands.StreamStatementCommand
import io.sqlext.rewriter.SqlRewriterRegistry
import io.sqlext.rewriter.SqlRewriterRegistry.timeoutOf
import org.apache.spark.sql.catalyst.plans.logical.{CreateFlowCommand,
  CreateMaterializedViewAsSelect, CreateStreamingTableAsSelect, LogicalPlan}
import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * Spark's parser first; when it rejects a statement, the registered Python rewriter (the one
 * owner of the windowed grammar) may lower it to plain Spark SQL, which Spark then parses.
 * Ordinary SQL never reaches Python. Every other method is forwarded unchanged.
 */
class RewritingParser(session: SparkSession, delegate: ParserInterface)
    extends ParserInterface {

  override def parsePlan(sqlText: String): LogicalPlan =
    AccessChecks.parsed(session, withRewrite(unsubstituted(sqlText), None)(delegate.parsePlan))

  /** `spark.sql(text, args)` and Spark Connect's parameterized SQL come here. Delta's parser
   *  (4.4), which ours wraps, drops the values on the way to Spark's; Spark's own parser then
   *  parses the statement with them (ParameterBinding.sparksOwn), so its meaning is Spark's. */
  override def parsePlanWithParameters(sqlText: String, ctx: ParameterContext): LogicalPlan =
    AccessChecks.parsed(session, withRewrite(unsubstituted(sqlText), Some(ctx))(text =>
      ParameterBinding.sparksOwn(delegate.parsePlanWithParameters(text, ctx), text, ctx)))

  override def parseQuery(sqlText: String): LogicalPlan =
    AccessChecks.parsed(session, withRewrite(unsubstituted(sqlText), None)(delegate.parseQuery))

  /** Spark's own parse wins whenever it succeeds (spec/sql.md section 10): a statement Spark
   *  parses, its declarative-pipeline statements included, never reaches the rewriter. */
  private def withRewrite(sqlText: String, parameters: Option[ParameterContext])(
      parse: String => LogicalPlan): LogicalPlan =
    try parse(sqlText)
    catch { case original: ParseException => rewritten(sqlText, parse, parameters, original) }

  private def rewritten(sqlText: String, parse: String => LogicalPlan,
      parameters: Option[ParameterContext], original: Exception): LogicalPlan = {
    val pipeline = insidePipeline
    SqlRewriterRegistry.rewrite(sqlText, sessionUdafs, pipeline, timeoutOf(session)) match {
      case Some(answer) if answer.startsWith("SQL\n") =>
        val text = answer.stripPrefix("SQL\n")
        // The rewritten text's markers are bound here, not by Spark's parser: see
        // ParameterBinding.
        val plan = parameters.fold(parse(text))(
          ParameterBinding.bind(delegate.parsePlan(text), _, sqlText))
        analyzedForUser(plan, sqlText, pipeline)
      case Some(answer) if answer.startsWith("COMMAND\n") && pipeline =>
        throw SqlExtErrors.parse("SQL_EXT_COMMAND_IN_PIPELINE",
          sqlText, "this statement manages sql-ext's own streaming " +
          "tables, which run outside declarative pipelines; in a pipeline, define windowed " +
          "datasets with CREATE STREAMING TABLE ... AS, CREATE FLOW or CREATE MATERIALIZED " +
          "VIEW", 1, 0)
      case Some(answer) if answer.startsWith("COMMAND\n") =>
        // The command hands its text back to Python when it runs; values would not travel.
        if (parameters.exists(ParameterBinding.hasValues)) {
          throw SqlExtErrors.parse("SQL_EXT_NO_PARAMETERS",
            sqlText, "streaming-table statements take no parameters: " +
            "write the values into the statement", 1, 0)
        }
        StreamStatementCommand(answer.stripPrefix("COMMAND\n"), sqlText)
      case Some(answer) if answer.startsWith("ERROR\n") =>
        val Array(_, condition, line, pos, message) = answer.split("\n", 5)
        throw SqlExtErrors.parse(condition, sqlText, message, line.toInt, pos.toInt)
      case None => throw unregistered(sqlText, original)
      case _ => throw original
    }
  }

  /** Whether a declarative pipeline is registering this statement: it parses each statement
   *  of its SQL files with the session's parser, and the flows of a Python definition over
   *  Spark Connect. The parser has no other way to know its caller than the stack. A Python
   *  definition's spark.sql(...) is first parsed by Connect's SQL command handler, which
   *  checks it is no command before handing the text back to the client (Spark 4.2:
   *  SparkConnectPlanner.handleSqlCommand calls transformRelation only for requests that carry
   *  a pipeline analysis context; a plain spark.sql runs through executeSQL). Asked only of
   *  statements Spark's parser rejected. */
  private def insidePipeline: Boolean = {
    val frames = Thread.currentThread.getStackTrace
    frames.exists { frame =>
      frame.getClassName.startsWith("org.apache.spark.sql.pipelines.") ||
        frame.getClassName.startsWith("org.apache.spark.sql.connect.pipelines.")
    } || frames.zip(frames.drop(1)).exists { case (callee, caller) =>
      callee.getMethodName == "transformRelation" && caller.getMethodName == "handleSqlCommand" &&
        caller.getClassName == "org.apache.spark.sql.connect.planner.SparkConnectPlanner"
    }
  }

  /** The Python UDAFs registered in this session (by a Spark Connect client, for one): the
   *  names of its functions with the batched form's prefix. */
  private def sessionUdafs: String =
    session.sessionState.functionRegistry.listFunction().map(_.funcName)
      .filter(_.startsWith(Contract.UdafBatchedPrefix))
      .map(_.stripPrefix(Contract.UdafBatchedPrefix)).mkString(",")

  /** Analyzes the rewritten plan here, so that an error (an unknown column, a missing table)
   *  is reported in the user's terms (WindowedErrors) rather than the rewrite's. The
   *  statement's own analysis runs again later (milliseconds, for windowed statements only). */
  private def analyzedForUser(plan: LogicalPlan, sqlText: String, pipeline: Boolean)
      : LogicalPlan = plan match {
    // A declarative pipeline's definition reads the pipeline's own datasets, which exist only
    // in the pipeline's analysis, not yet in any catalog: the pipeline analyzes it.
    case _: CreateMaterializedViewAsSelect | _: CreateStreamingTableAsSelect |
         _: CreateFlowCommand => plan
    case _ if pipeline => plan // a Python pipeline's spark.sql(...) in a dataset's query
    case _ => analyzedHere(plan, sqlText)
  }

  private def analyzedHere(plan: LogicalPlan, sqlText: String): LogicalPlan = {
    try session.sessionState.executePlan(plan).assertAnalyzed()
    catch { case error: AnalysisException => throw WindowedErrors.forUser(error, sqlText) }
    plan
  }

  /** The extension is loaded but this process has no rewriter: a session built outside
   *  sql_ext (for instance by dbt-spark's `method: session`). Say so beside Spark's error. */
  private def unregistered(sqlText: String, original: Exception): Exception = original match {
    case parse: ParseException =>
      SqlExtErrors.parse("SQL_EXT_REWRITER_NOT_REGISTERED", sqlText,
        parse.getMessage.linesIterator.next() + " (sql-ext's SQL " +
        "needs its Python rewriter, which is not registered in this process: build the " +
        "session with sql_ext.configure(builder); for dbt `method: session`, run dbt as " +
        "`sql-ext dbt ...`)", parse.line.getOrElse(1), parse.startPosition.getOrElse(0))
    case other => other
  }

  override def parseExpression(sqlText: String): Expression =
    delegate.parseExpression(unsubstituted(sqlText))
  override def parseTableIdentifier(sqlText: String): TableIdentifier =
    delegate.parseTableIdentifier(unsubstituted(sqlText))
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier =
    delegate.parseFunctionIdentifier(unsubstituted(sqlText))
  override def parseMultipartIdentifier(sqlText: String): Seq[String] =
    delegate.parseMultipartIdentifier(unsubstituted(sqlText))
  override def parseRoutineParam(sqlText: String): StructType =
    delegate.parseRoutineParam(unsubstituted(sqlText))
  override def parseTableSchema(sqlText: String): StructType =
    delegate.parseTableSchema(unsubstituted(sqlText))
  override def parseDataType(sqlText: String): DataType =
    delegate.parseDataType(unsubstituted(sqlText))

  /** `sqlText`, once the access checks found no server variable in it that Spark's parser
   *  would substitute for the session's user (AccessChecks.serverVariables). */
  private def unsubstituted(sqlText: String): String = {
    AccessChecks.serverVariables(session, sqlText)
    sqlText
  }
}
