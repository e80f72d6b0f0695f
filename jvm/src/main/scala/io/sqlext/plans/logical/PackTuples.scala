package io.sqlext.plans.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.BinaryType

/**
 * The tuples of each task of `child` packed per key: one row per key (and task) holding the `keys`
 * columns and `tuples`, the key's rows of `child` (all their columns) in Spark's own binary row
 * form, one after another in the task's read order (io.sqlext.streaming.input.PackedTuples, which
 * plans it and reads the rows in place). A map-side step: it never moves rows between tasks.
 */
case class PackTuples(keys: Seq[Attribute], tuples: Attribute, child: LogicalPlan)
    extends UnaryNode {

  override def output: Seq[Attribute] = keys :+ tuples

  override def producedAttributes: AttributeSet = AttributeSet(tuples)

  // Every column of the child is read (packed), so column pruning keeps them all.
  override lazy val references: AttributeSet = child.outputSet

  override protected def withNewChildInternal(newChild: LogicalPlan): PackTuples =
    copy(child = newChild)
}

object PackTuples {
  /** The column holding a pack's rows. */
  val TuplesColumn = "__sx_tuples"

  /** Packs `child` by the columns named `keyColumns`. */
  def apply(keyColumns: Seq[String], child: LogicalPlan): PackTuples =
    PackTuples(keyColumns.map(name => child.output.find(_.name == name).get),
      AttributeReference(TuplesColumn, BinaryType, nullable = false)(), child)
}
