package io.sqlext.analysis

import io.sqlext.{Contract, SqlExtErrors}
import io.sqlext.parser.WindowedErrors
import io.sqlext.plans.logical.WindowAssign
import io.sqlext.streaming.StreamingWindows
import io.sqlext.streaming.time.QueryCheckpoint
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SubqueryAlias, UnaryNode}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.{CurrentOrigin, Origin}
import org.apache.spark.sql.sqlext.CatalystFrames
import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * `SELECT * FROM sql_ext_pipeline_window(TABLE(<tuples>), '<window>')`: what the rewriter
 * lowers a windowed query of a declarative pipeline to (sql_ext/sql/pipeline.py). The window
 * is JSON: `spec`, `tuples` (the window's input: WHERE and helper columns over the TABLE
 * argument, the query's FROM and JOINs, read as __sx_src), `query` (the aggregation over the
 * firings, FROM __sx_w) and `user` (the statement as the user wrote it). A pipeline resolves its own datasets in the tuples' query
 * (STREAM(dataset) included) during its analysis, after the statement was parsed; only then
 * can the window be built and its queries analyzed, so that happens here, in
 * [[ResolvePipelineWindows]], and the aggregation's errors are said in the user's terms
 * ([[WindowedErrors]]) as the parser says them outside pipelines.
 */
object PipelineWindowFunction {
  val Name = "sql_ext_pipeline_window"

  val registration = GeneratedTableFunction.registration(Name,
    "_FUNC_(TABLE(query), window) - SPL windows in a declarative pipeline (internal).")(
    PipelineWindow(_, _))
}

/** A pipeline's windowed query, until its tuples are resolved. */
case class PipelineWindow(window: String, child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = Nil
  override lazy val resolved: Boolean = false
  override protected def withNewChildInternal(newChild: LogicalPlan): PipelineWindow =
    copy(child = newChild)
}

/**
 * Resolves [[PipelineWindow]] once its tuples are: a batch window as everywhere
 * ([[WindowAssign]]); a stream's as the window processors of a sql-ext streaming table, each
 * firing one row of aggregate values ([[StreamingWindows.ofPipeline]]); its input and the
 * aggregation over its firings analyzed here.
 */
case class ResolvePipelineWindows(session: SparkSession) extends Rule[LogicalPlan] {
  private implicit val formats: Formats = DefaultFormats

  /** The query in `text` (plain Spark SQL) reading `plan` where it names `relation`. */
  private def parsed(text: JValue, relation: String, plan: LogicalPlan): LogicalPlan =
    session.sessionState.sqlParser.parsePlan(text.extract[String]).transform {
      case UnresolvedRelation(Seq(`relation`), _, _) => plan
    }

  private def analyzed(plan: LogicalPlan): LogicalPlan =
    CatalystFrames.of(session, plan).queryExecution.analyzed

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case PipelineWindow(window, child) if child.resolved =>
      val json = JsonMethods.parse(window)
      val spec = JsonMethods.compact(json \ "spec")
      val user = (json \ "user").extract[String]
      try {
        // The window's input over the resolved source, as the tuples' query says.
        val tuples = analyzed(parsed(json \ "tuples", Contract.TuplesAlias, child))
        val firings = if (child.isStreaming) {
          // Its tasks find the batch's watermark in the checkpoint the pipeline gives the flow.
          QueryCheckpoint.watch(session)
          StreamingWindows.ofPipeline(CatalystFrames.of(session, tuples), spec)
            .queryExecution.analyzed
        } else WindowAssign.create(WindowSpec.fromJson(spec), tuples)
        analyzed(parsed(json \ "query", Contract.SourceAlias,
          SubqueryAlias(Contract.SourceAlias, firings)))
      } catch {
        case error: AnalysisException if error.getCondition != null &&
            error.getCondition.nonEmpty && !SqlExtErrors.isOwn(error.getCondition) =>
          // Without the origin of the rewritten call, which would be the error's query context:
          // the error shows the user's statement.
          throw CurrentOrigin.withOrigin(Origin())(WindowedErrors.forUser(error, user))
      }
  }
}
