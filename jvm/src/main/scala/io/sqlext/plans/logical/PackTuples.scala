package io.sqlext.plans.logical

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.ArrayType

/**
 * The tuples of each task of `child` packed per key: one row per key (and task) holding the
 * `keys` columns and each other column as an array of the key's values, in the task's read
 * order (io.sqlext.streaming.PackedTuples, which plans it and unpacks). A map-side step: it
 * never moves rows between tasks.
 */
case class PackTuples(keys: Seq[Attribute], packed: Seq[Attribute], child: LogicalPlan)
    extends UnaryNode {

  override def output: Seq[Attribute] = keys ++ packed

  override def producedAttributes: AttributeSet = AttributeSet(packed)

  // Every column of the child is read (packed), so column pruning keeps them all.
  override lazy val references: AttributeSet = child.outputSet

  override protected def withNewChildInternal(newChild: LogicalPlan): PackTuples =
    copy(child = newChild)
}

object PackTuples {
  /** Packs `child` by the columns named `keyColumns`. */
  def apply(keyColumns: Seq[String], child: LogicalPlan): PackTuples = {
    val keys = keyColumns.map(name => child.output.find(_.name == name).get)
    val packed = packedIndexes(child.output.map(_.name), keyColumns).map(child.output(_)).map(a =>
      AttributeReference(a.name, ArrayType(a.dataType, containsNull = true), nullable = false)())
    PackTuples(keys, packed, child)
  }

  /** The layout of a pack, which the unpacking reads by position: after the keys, every other
   *  column of `columns` (by name), in their order. */
  def packedIndexes(columns: Seq[String], keyColumns: Seq[String]): Seq[Int] =
    columns.indices.filterNot(i => keyColumns.contains(columns(i)))
}
