package io.sqlext.parser

import scala.collection.mutable

import io.sqlext.Contract
import org.apache.spark.sql.catalyst.analysis.{GeneralParameterizedQuery, NameParameterizedQuery,
  NamedParameter, PosParameter, PosParameterizedQuery}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.{HybridParameterContext, NamedParameterContext,
  ParameterContext, ParseException, PositionalParameterContext}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.Origin
import org.apache.spark.sql.execution.SparkSqlParser

/**
 * Binds `spark.sql(text, args)`'s values into a rewritten windowed statement. Spark's own
 * binding (the analyzer's BindParameters) does not reach into a table function's TABLE(...)
 * argument, where the rewrite puts the user's FROM and WHERE; so the parser binds every marker
 * itself, subqueries included. The rewriter names the i-th `?` of the user's text
 * `:__sx_pos<i>` (Contract), because the rewrite may move clauses and so the markers' order.
 */
object ParameterBinding {
  private lazy val sparkParser = new SparkSqlParser()

  /** `parsed` when it holds no unbound marker; else the statement as Spark's own parser parses
   *  it with the values (a parser in between dropped them). A statement Spark's parser does not
   *  know (Delta's own) keeps its plan, under Spark's node that binds values in analysis. */
  def sparksOwn(parsed: LogicalPlan, sqlText: String, context: ParameterContext)
      : LogicalPlan = {
    if (!hasValues(context) || markers(parsed).isEmpty) return parsed
    try sparkParser.parsePlanWithParameters(sqlText, context)
    catch {
      case _: ParseException => context match {
        case NamedParameterContext(params) =>
          NameParameterizedQuery(parsed, params.keys.toSeq, params.values.toSeq)
        case PositionalParameterContext(params) => PosParameterizedQuery(parsed, params)
        case HybridParameterContext(args, names) => GeneralParameterizedQuery(parsed, args, names)
        case _ => parsed
      }
    }
  }

  /** The names of the plan's parameter markers, subqueries included ("?" for a positional
   *  one), in the order met. */
  private def markers(plan: LogicalPlan): mutable.LinkedHashSet[String] = {
    val found = mutable.LinkedHashSet[String]()
    plan.foreachWithSubqueries(_.expressions.foreach(_.foreach {
      case NamedParameter(name) => found += name
      case PosParameter(_) => found += "?"
      case _ =>
    }))
    found
  }

  def bind(plan: LogicalPlan, context: ParameterContext, userText: String): LogicalPlan = {
    val (named, positional) = values(context)
    def valueOf(name: String): Option[Expression] =
      Contract.positionalParameterIndex(name) match {
        case Some(i) => positional.lift(i)
        case None => named.get(name)
      }
    markers(plan).find(valueOf(_).isEmpty).foreach(name => throw unbound(userText, name))
    plan.transformAllExpressionsWithSubqueries { case NamedParameter(name) => valueOf(name).get }
  }

  def hasValues(context: ParameterContext): Boolean = {
    val (named, positional) = values(context)
    named.nonEmpty || positional.nonEmpty
  }

  private def values(context: ParameterContext)
      : (Map[String, Expression], IndexedSeq[Expression]) = context match {
    case NamedParameterContext(params) => (params, IndexedSeq.empty)
    case PositionalParameterContext(params) => (Map.empty, params.toIndexedSeq)
    case HybridParameterContext(args, names) =>
      val pairs = args.zipAll(names, null, null)
      (pairs.collect { case (value, name) if name != null && name.nonEmpty => name -> value }
        .toMap,
        pairs.collect { case (value, name) if name == null || name.isEmpty => value }
          .toIndexedSeq)
    case _ => (Map.empty, IndexedSeq.empty)
  }

  /** Spark's own error for a marker without a value, at the marker in the user's text. */
  private def unbound(userText: String, name: String): ParseException = {
    val (marker, what) = Contract.positionalParameterIndex(name) match {
      case Some(i) => (nthIndexOf(userText, "?", i), s"positional parameter ${i + 1} (`?`)")
      case None => (userText.indexOf(":" + name), s"parameter :$name")
    }
    val at = math.max(marker, 0)
    val line = userText.substring(0, at).count(_ == '\n') + 1
    val column = at - (userText.lastIndexOf('\n', at - 1) + 1)
    // Spark's own condition for it, positioned in the user's text.
    new ParseException(Some(userText), Origin(line = Some(line), startPosition = Some(column)),
      "UNBOUND_SQL_PARAMETER", Map("name" -> what))
  }

  private def nthIndexOf(text: String, what: String, n: Int): Int =
    (0 to n).foldLeft(-1)((from, _) => if (from < -1) from else {
      val found = text.indexOf(what, from + 1)
      if (found < 0) -2 else found
    })
}
