package io.sqlext.replay

import io.sqlext.window.WindowSpec
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, BoundReference, SortOrder}
import org.apache.spark.sql.catalyst.expressions.codegen.LazilyGeneratedOrdering
import org.apache.spark.sql.types._

/**
 * The arrival order of a window's tuples (spec/sql.md section 2), the one rule batch replay and
 * the streaming processors both follow: the ORDER BY of OVER if there is one, ties broken by the
 * source's order (`sql_ext_arrival()`, [[io.sqlext.expressions.ArrivalSequence]]). PUNCT()
 * punctuates the end of each file, so its files come one after another in source order
 * (`sql_ext_arrival_file()`), ORDER BY acting within a file.
 */
object ArrivalOrder {

  /** The sort key columns, outermost first, among the helper columns `present`. */
  def keys(spec: WindowSpec, present: String => Boolean): Seq[String] = {
    val files = if (spec.isFilePunct) Seq(WindowSpec.FileColumn) else Nil
    (files :+ WindowSpec.OrderColumn :+ WindowSpec.SeqColumn).filter(present)
  }

  /** Batch: the sort orders over the operator's input attributes. */
  def sortOrders(spec: WindowSpec, inputs: Seq[Attribute]): Seq[SortOrder] = {
    def attr(name: String) = inputs.find(_.name == name)
    keys(spec, attr(_).isDefined).map(key => SortOrder(attr(key).get, Ascending))
  }

  /** Streaming: the same order over the Rows of `schema`. A hot path (every tuple of a
   *  micro-batch): long keys (the arrival and file ranks, most ORDER BY columns) compare
   *  unboxed, and the keys are walked without allocating. */
  def rowOrdering(spec: WindowSpec, schema: StructType): Ordering[Row] = {
    val compares: Array[(Row, Row) => Int] = keys(spec, schema.fieldNames.contains).map { key =>
      val i = schema.fieldIndex(key)
      schema(i).dataType match {
        case LongType => (a: Row, b: Row) =>
          if (a.isNullAt(i) || b.isNullAt(i)) nullsFirst(a.isNullAt(i), b.isNullAt(i))
          else java.lang.Long.compare(a.getLong(i), b.getLong(i))
        case other =>
          val values = compareValues(other)
          (a: Row, b: Row) => values(a.get(i), b.get(i))
      }
    }.toArray
    (a: Row, b: Row) => {
      var result = 0
      var k = 0
      while (result == 0 && k < compares.length) { result = compares(k)(a, b); k += 1 }
      result
    }
  }

  /** Streaming, tuples in Spark's internal form: the same order. When every key is a long (the
   *  arrival and file ranks; a BIGINT or TIMESTAMP ORDER BY) they compare unboxed, straight
   *  from the rows' bytes; other ORDER BY types by Spark's generated ordering. */
  def internalOrdering(spec: WindowSpec, schema: StructType): Ordering[InternalRow] = {
    val ordinals = keys(spec, schema.fieldNames.contains).map(schema.fieldIndex).toArray
    if (ordinals.exists(i => !isLong(schema(i).dataType))) {
      return new LazilyGeneratedOrdering(ordinals.toIndexedSeq.map(i =>
        SortOrder(BoundReference(i, schema(i).dataType, schema(i).nullable), Ascending)))
    }
    (a: InternalRow, b: InternalRow) => {
      var result = 0
      var k = 0
      while (result == 0 && k < ordinals.length) {
        val i = ordinals(k)
        val (aNull, bNull) = (a.isNullAt(i), b.isNullAt(i))
        result = if (aNull || bNull) nullsFirst(aNull, bNull)
          else java.lang.Long.compare(a.getLong(i), b.getLong(i))
        k += 1
      }
      result
    }
  }

  /** The ordinals of the sort keys in `schema` when every key is a long, else empty. */
  def longKeys(spec: WindowSpec, schema: StructType): Array[Int] = {
    val ordinals = keys(spec, schema.fieldNames.contains).map(schema.fieldIndex).toArray
    if (ordinals.forall(i => isLong(schema(i).dataType))) ordinals else Array.empty
  }

  private def isLong(dataType: DataType): Boolean =
    dataType == LongType || dataType == TimestampType || dataType == TimestampNTZType

  private def nullsFirst(aNull: Boolean, bNull: Boolean): Int =
    if (aNull) { if (bNull) 0 else -1 } else 1

  /** Ascending, NULL first (Spark's default), over the external values of `dataType`. */
  def compareValues(dataType: DataType): (Any, Any) => Int = {
    val nonNull: (Any, Any) => Int = dataType match {
      case struct: StructType =>
        val fields = struct.fields.map(f => compareValues(f.dataType)).zipWithIndex
        (a, b) => {
          val (x, y) = (a.asInstanceOf[Row], b.asInstanceOf[Row])
          fields.iterator.map { case (c, i) => c(x.get(i), y.get(i)) }.find(_ != 0).getOrElse(0)
        }
      case _ => (a, b) => (a, b) match {
        case (x: Comparable[_], _) => x.asInstanceOf[Comparable[Any]].compareTo(b)
        case _ => throw new IllegalArgumentException(
          s"sql_ext: ORDER BY of a window cannot order values of type ${dataType.simpleString}")
      }
    }
    (a, b) =>
      if (a == null) { if (b == null) 0 else -1 }
      else if (b == null) 1
      else nonNull(a, b)
  }
}
