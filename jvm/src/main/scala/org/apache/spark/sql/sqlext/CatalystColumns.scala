package org.apache.spark.sql.sqlext

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.classic.ExpressionUtils

/** A Column of the extension's own Catalyst expression. Spark keeps the conversion to its SQL
 *  package (private[sql]); this one object lives there for it, as Delta's helpers do. */
object CatalystColumns {
  def of(expression: Expression): Column = ExpressionUtils.column(expression)

  /** The Catalyst expression of a Column built with Spark's functions. */
  def expression(column: Column): Expression = ExpressionUtils.expression(column)
}
