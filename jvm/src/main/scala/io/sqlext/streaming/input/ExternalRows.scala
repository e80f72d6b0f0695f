package io.sqlext.streaming.input

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * Rows of `schema` between Spark's internal form, in which the window processors hold their
 * tuples, and Rows, the form of their state and output. Both directions go through the encoder
 * the state itself uses (`Encoders.row`), made in the task, so a timestamp becomes the same
 * external type (Timestamp or Instant, by the session's java8API setting) as in the state.
 */
final class ExternalRows(schema: StructType) extends Serializable {
  @transient private lazy val encoder = ExpressionEncoder(schema) // Encoders.row's encoder
  @transient private lazy val toInternal = encoder.createSerializer()
  @transient private lazy val toExternal = encoder.resolveAndBind().createDeserializer()

  /** A Row in Spark's internal form: a copy of its own. */
  def internal(row: Row): UnsafeRow = toInternal(row).asInstanceOf[UnsafeRow].copy()

  /** A new Row of an internal row's values. */
  def external(row: InternalRow): Row = toExternal(row)
}

object ExternalRows {
  /** One value of `dataType` between the two forms (null stays null). */
  final class OfValue(dataType: DataType) extends Serializable {
    private val rows = new ExternalRows(new StructType().add("value", dataType))

    def external(value: Any): Any =
      if (value == null) null else rows.external(new GenericInternalRow(Array(value))).get(0)

    def internal(value: Any): Any =
      if (value == null) null else rows.internal(Row(value)).get(0, dataType)
  }
}
