package io.sqlext.access

import org.apache.spark.sql.catalyst.expressions.{Expression, Unevaluable}
import org.apache.spark.sql.types.{BooleanType, DataType}

/**
 * Where a `tables` rule's row filter and column masks apply in a user's plan ([[RowPolicies]]):
 * placeholders over the table's columns (`children`, the relation's output), which
 * [[ApplyRowPolicies]] replaces, each time the plan is optimized, by the rule as it is then (a
 * stream's next micro-batch applies a changed rule). `rule` is the rule's text when the plan
 * was analysed: two plans under different rules never look alike (Spark's cache matches plans).
 */
case class RowFilterOf(user: String, database: String, table: String, rule: String,
    children: Seq[Expression]) extends Expression with Unevaluable {
  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  override def prettyName: String = "row_filter_of"
  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[Expression]): RowFilterOf = copy(children = newChildren)
}

/** A column as its rule's mask reads it (`hidden`: the column is hidden, and reads as NULL;
 *  the checks refuse a statement that uses it). */
case class ColumnMaskOf(user: String, database: String, table: String, column: String,
    hidden: Boolean, rule: String, dataType: DataType, children: Seq[Expression])
    extends Expression with Unevaluable {
  override def nullable: Boolean = true
  override def prettyName: String = "column_mask_of"
  override protected def withNewChildrenInternal(
      newChildren: IndexedSeq[Expression]): ColumnMaskOf = copy(children = newChildren)
}
