package io.sqlext.execution

import io.sqlext.window.WindowSpec
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.codegen.{GenerateUnsafeRowJoiner, UnsafeRowJoiner}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types._

/**
 * Where the helper columns sit in the child's rows and how to read them; built on the driver,
 * shipped to the tasks.
 */
final case class ReplayLayout(spec: WindowSpec, input: Seq[Attribute], meta: Seq[Attribute]) {

  private def ordinal(name: String): Int = input.indexWhere(_.name == name)

  val partitionAttrs: Seq[Attribute] =
    spec.partitionColumns.map(name => input(ordinal(name)))
  val orderOrdinal: Int = ordinal(WindowSpec.OrderColumn)
  val orderType: DataType = if (orderOrdinal >= 0) input(orderOrdinal).dataType else NullType
  val deltaOrdinal: Int = ordinal(WindowSpec.DeltaColumn)
  val punctOrdinal: Int = ordinal(WindowSpec.PunctColumn)
  val fileOrdinal: Int = ordinal(WindowSpec.FileColumn)
  val clockStartOrdinal: Int = ordinal(WindowSpec.ClockStartColumn)
  val clockEndOrdinal: Int = ordinal(WindowSpec.ClockEndColumn)

  private val deltaType: DataType =
    if (deltaOrdinal >= 0) input(deltaOrdinal).dataType else NullType

  /** DELTA thresholds are seconds; timestamps are compared in their microseconds. */
  val deltaThreshold: Double = deltaType match {
    case TimestampType | TimestampNTZType => spec.delta * 1e6
    case _ => spec.delta
  }

  /** The DELTA attribute of a row as a double (timestamps in microseconds). */
  def deltaValue(row: InternalRow): Double = deltaType match {
    case IntegerType | DateType => row.getInt(deltaOrdinal).toDouble
    case LongType | TimestampType | TimestampNTZType => row.getLong(deltaOrdinal).toDouble
    case DoubleType => row.getDouble(deltaOrdinal)
    case FloatType => row.getFloat(deltaOrdinal).toDouble
    case ShortType => row.getShort(deltaOrdinal).toDouble
    case ByteType => row.getByte(deltaOrdinal).toDouble
    case d: DecimalType => row.getDecimal(deltaOrdinal, d.precision, d.scale).toDouble
    case other => throw new IllegalStateException(s"DELTA over $other")
  }

  /** Rows that cannot be windowed: their DELTA value or replayed arrival time is NULL. */
  def notWindowable(row: InternalRow): Boolean =
    (deltaOrdinal >= 0 && row.isNullAt(deltaOrdinal)) ||
      (spec.policy == "time" && row.isNullAt(orderOrdinal))

  def arrivalValue(row: InternalRow): Any =
    if (orderOrdinal >= 0) row.get(orderOrdinal, orderType) else null

  def keyProjection: UnsafeProjection = UnsafeProjection.create(partitionAttrs, input)

  /** Orders partition keys for punctuations and ticks that flush several partitions. */
  def keyOrdering: Ordering[UnsafeRow] = {
    val bound = partitionAttrs.zipWithIndex.map { case (a, i) =>
      SortOrder(BoundReference(i, a.dataType, a.nullable), Ascending)
    }
    new InterpretedOrdering(bound).asInstanceOf[Ordering[UnsafeRow]]
  }

  /** Output rows are an input row followed by the firing's columns, concatenated bytewise. */
  def outputJoiner: UnsafeRowJoiner = GenerateUnsafeRowJoiner.create(
    DataTypeUtils.fromAttributes(input), DataTypeUtils.fromAttributes(meta))

  def metaProjection: UnsafeProjection = UnsafeProjection.create(meta.map(_.dataType).toArray)

  /** Input rows as UnsafeRows (what Spark operators produce; projected otherwise). */
  def unsafeInput: UnsafeProjection = UnsafeProjection.create(input.map(_.dataType).toArray)
}
