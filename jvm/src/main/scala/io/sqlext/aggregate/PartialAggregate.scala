package io.sqlext.aggregate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.MathUtils
import org.apache.spark.sql.types._

/**
 * One aggregate computed from partials, by Spark's own rules: the one arithmetic of every path
 * that keeps partials (batch SLIDING windows and streaming firings and panes, through
 * [[AggregateLayout]]). Its value, result type, NULL and NaN handling and overflow are those of
 * Spark's built-in aggregate of the same name over the same rows:
 *
 *  - COUNT counts non-NULL inputs (COUNT(*) every row): BIGINT, never NULL.
 *  - SUM of an integer type adds in BIGINT; under ANSI an overflow raises Spark's
 *    ARITHMETIC_OVERFLOW (MathUtils.addExact, as Spark's Sum), otherwise it wraps, as Spark's.
 *  - SUM of FLOAT or DOUBLE adds in DOUBLE; NaN and infinities propagate as IEEE addition does.
 *  - AVG adds every input as a DOUBLE (Spark's Average does, for integers too: an exact BIGINT
 *    sum would overflow where Spark's does not) and divides by the count: DOUBLE.
 *  - MIN and MAX keep the input's type; floating values follow Spark's order, NaN above every
 *    number and -0.0 equal to 0.0, and a tie keeps the older value, as Spark's MIN and MAX do.
 *  - No non-NULL input: NULL (COUNT: 0).
 *
 * A partial is two longs: `acc`, the accumulator (a long, or a double's bits), and `n`, how many
 * non-NULL inputs it holds. A DECIMAL input has no partial ([[PartialAggregates.of]]): Spark
 * widens its precision as it sums, which the general path does by running Spark's own aggregate.
 */
sealed abstract class PartialAggregate extends Serializable {

  /** Spark's result type of the aggregate. */
  def resultType: DataType

  /** `acc` after one more non-NULL input `x` (as [[read]] gives it), `n` inputs before it. */
  def step(acc: Long, n: Long, x: Long): Long

  /** The accumulator of two partials, each with inputs, `older` holding the earlier tuples. */
  def combine(older: Long, newer: Long): Long

  /** A non-NULL input of a row in Spark's internal form, as the accumulator holds it. */
  def read(row: InternalRow, ordinal: Int): Long

  /** The same for a value of an external Row (a Long, Int, Double, Float, ...). */
  def readValue(value: Any): Long

  /** The aggregate's value, in [[resultType]] (Spark's internal and external form alike). */
  def result(acc: Long, n: Long): Any

  /** The types of the columns a partial takes in a row (state, shuffle): one, AVG's two. */
  def partialTypes: Seq[DataType]

  /** A partial as the values of its columns. */
  def partialValues(acc: Long, n: Long): Seq[Any]

  /** The accumulator and count of a partial held in `values` from `at` on (nulls: none). */
  def partialAcc(values: Int => Any, at: Int): Long
  def partialCount(values: Int => Any, at: Int): Long
}

object PartialAggregate {
  @inline private[aggregate] def bits(x: Double): Long = java.lang.Double.doubleToRawLongBits(x)
  @inline private[aggregate] def double(acc: Long): Double =
    java.lang.Double.longBitsToDouble(acc)

  /** Spark's order of floating values (SQLOrderingUtil): NaN above every number and equal to
   *  itself; -0.0 equal to 0.0. */
  def compareDoubles(x: Double, y: Double): Int =
    if (x == y) 0 else java.lang.Double.compare(x, y)

  def isIntegral(dataType: DataType): Boolean = dataType match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }

  def isFloating(dataType: DataType): Boolean = dataType == FloatType || dataType == DoubleType

  def longOf(row: InternalRow, ordinal: Int, dataType: DataType): Long = dataType match {
    case LongType => row.getLong(ordinal)
    case IntegerType => row.getInt(ordinal).toLong
    case ShortType => row.getShort(ordinal).toLong
    case ByteType => row.getByte(ordinal).toLong
  }

  def doubleOf(row: InternalRow, ordinal: Int, dataType: DataType): Double = dataType match {
    case DoubleType => row.getDouble(ordinal)
    case FloatType => row.getFloat(ordinal).toDouble
    case _ => longOf(row, ordinal, dataType).toDouble
  }

  /** A long in an integer type (MIN and MAX of BYTE, SHORT, INT keep it). */
  def integral(value: Long, dataType: DataType): Any = dataType match {
    case IntegerType => value.toInt
    case ShortType => value.toShort
    case ByteType => value.toByte
    case _ => value
  }
}

import PartialAggregate._

/** A partial of one column: its value, NULL before any input (COUNT's: the count). */
private[aggregate] sealed abstract class OneColumn extends PartialAggregate {
  def partialType: DataType
  override def partialTypes: Seq[DataType] = Seq(partialType)
  override def partialValues(acc: Long, n: Long): Seq[Any] =
    Seq(if (n == 0) null else result(acc, n))
  override def partialCount(values: Int => Any, at: Int): Long = if (values(at) == null) 0 else 1
}

/** COUNT(column) or COUNT(*): only `n`. */
final case class CountOf(all: Boolean) extends PartialAggregate {
  override def resultType: DataType = LongType
  override def step(acc: Long, n: Long, x: Long): Long = 0L
  override def combine(older: Long, newer: Long): Long = 0L
  override def read(row: InternalRow, ordinal: Int): Long = 0L
  override def readValue(value: Any): Long = 0L
  override def result(acc: Long, n: Long): Any = n
  override def partialTypes: Seq[DataType] = Seq(LongType)
  override def partialValues(acc: Long, n: Long): Seq[Any] = Seq(n)
  override def partialAcc(values: Int => Any, at: Int): Long = 0L
  override def partialCount(values: Int => Any, at: Int): Long =
    values(at).asInstanceOf[Long]
}

/** SUM of an integer type, in BIGINT: checked under ANSI, wrapping otherwise (Spark's Sum). */
final case class IntegralSum(inputType: DataType, ansi: Boolean) extends OneColumn {
  override def resultType: DataType = LongType
  override def partialType: DataType = LongType
  @inline private def add(a: Long, b: Long): Long = if (ansi) MathUtils.addExact(a, b) else a + b
  override def step(acc: Long, n: Long, x: Long): Long = add(acc, x)
  override def combine(older: Long, newer: Long): Long = add(older, newer)
  override def read(row: InternalRow, ordinal: Int): Long = longOf(row, ordinal, inputType)
  override def readValue(value: Any): Long = value.asInstanceOf[Number].longValue()
  override def result(acc: Long, n: Long): Any = if (n == 0) null else acc
  override def partialAcc(values: Int => Any, at: Int): Long =
    if (values(at) == null) 0L else values(at).asInstanceOf[Long]
}

/** SUM of FLOAT or DOUBLE, in DOUBLE (a FLOAT widened first, as Spark's Sum casts it). */
final case class FloatingSum(inputType: DataType) extends OneColumn {
  override def resultType: DataType = DoubleType
  override def partialType: DataType = DoubleType
  override def step(acc: Long, n: Long, x: Long): Long = bits(double(acc) + double(x))
  override def combine(older: Long, newer: Long): Long = bits(double(older) + double(newer))
  override def read(row: InternalRow, ordinal: Int): Long = bits(doubleOf(row, ordinal, inputType))
  override def readValue(value: Any): Long = bits(value.asInstanceOf[Number].doubleValue())
  override def result(acc: Long, n: Long): Any = if (n == 0) null else double(acc)
  override def partialAcc(values: Int => Any, at: Int): Long =
    if (values(at) == null) 0L else bits(values(at).asInstanceOf[Double])
}

/** AVG of any number type but DECIMAL: a DOUBLE sum (Spark's Average casts each input to
 *  DOUBLE before adding) over the count. Its partial: the sum (NULL before any input), count. */
final case class Average(inputType: DataType) extends PartialAggregate {
  override def resultType: DataType = DoubleType
  override def step(acc: Long, n: Long, x: Long): Long = bits(double(acc) + double(x))
  override def combine(older: Long, newer: Long): Long = bits(double(older) + double(newer))
  override def read(row: InternalRow, ordinal: Int): Long = bits(doubleOf(row, ordinal, inputType))
  override def readValue(value: Any): Long = bits(value.asInstanceOf[Number].doubleValue())
  override def result(acc: Long, n: Long): Any = if (n == 0) null else double(acc) / n
  override def partialTypes: Seq[DataType] = Seq(DoubleType, LongType)
  override def partialValues(acc: Long, n: Long): Seq[Any] =
    Seq(if (n == 0) null else double(acc), n)
  override def partialAcc(values: Int => Any, at: Int): Long =
    if (values(at) == null) 0L else bits(values(at).asInstanceOf[Double])
  override def partialCount(values: Int => Any, at: Int): Long =
    values(at + 1).asInstanceOf[Long]
}

/** MIN or MAX of FLOAT or DOUBLE in Spark's order; the result in the input's type. */
final case class FloatingExtreme(inputType: DataType, min: Boolean) extends OneColumn {
  override def resultType: DataType = inputType
  override def partialType: DataType = inputType
  @inline private def pick(older: Long, newer: Long): Long = {
    val order = compareDoubles(double(newer), double(older))
    if (if (min) order < 0 else order > 0) newer else older
  }
  override def step(acc: Long, n: Long, x: Long): Long = if (n == 0) x else pick(acc, x)
  override def combine(older: Long, newer: Long): Long = pick(older, newer)
  override def read(row: InternalRow, ordinal: Int): Long = bits(doubleOf(row, ordinal, inputType))
  override def readValue(value: Any): Long = bits(value.asInstanceOf[Number].doubleValue())
  override def result(acc: Long, n: Long): Any =
    if (n == 0) null else if (inputType == FloatType) double(acc).toFloat else double(acc)
  override def partialAcc(values: Int => Any, at: Int): Long =
    if (values(at) == null) 0L else readValue(values(at))
}

/** MIN or MAX of an integer type; the result in the input's type. */
final case class IntegralExtreme(inputType: DataType, min: Boolean) extends OneColumn {
  override def resultType: DataType = inputType
  override def partialType: DataType = inputType
  @inline private def pick(older: Long, newer: Long): Long =
    if (if (min) newer < older else newer > older) newer else older
  override def step(acc: Long, n: Long, x: Long): Long = if (n == 0) x else pick(acc, x)
  override def combine(older: Long, newer: Long): Long = pick(older, newer)
  override def read(row: InternalRow, ordinal: Int): Long = longOf(row, ordinal, inputType)
  override def readValue(value: Any): Long = value.asInstanceOf[Number].longValue()
  override def result(acc: Long, n: Long): Any = if (n == 0) null else integral(acc, inputType)
  override def partialAcc(values: Int => Any, at: Int): Long =
    if (values(at) == null) 0L else readValue(values(at))
}
