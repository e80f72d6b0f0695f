package io.sqlext.aggregate

import io.sqlext.SqlExtErrors
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._

/**
 * One aggregate computed from partials, by Spark's own rules: the one arithmetic of every path
 * that keeps partials (batch SLIDING windows and streaming firings and panes, through
 * [[AggregateLayout]]). Its value, result type, NULL and NaN handling and overflow are those of
 * Spark's built-in aggregate of the same name over the same rows:
 *
 *  - COUNT counts non-NULL inputs (COUNT(*) every row): BIGINT, never NULL.
 *  - SUM of an integer type is a BIGINT. It adds exactly (128 bits) and checks the value that
 *    leaves: under ANSI a sum outside BIGINT raises Spark's ARITHMETIC_OVERFLOW, otherwise it
 *    wraps, as Spark's Sum. Exact, because a window's running sums pass through tuples about to
 *    be evicted and through sub-ranges in any order: only the window's own sum decides (Spark's
 *    sum in one order may already fail on a partial sum; its order depends on partitions).
 *  - SUM of FLOAT or DOUBLE adds in DOUBLE; NaN and infinities propagate as IEEE addition does.
 *  - AVG is a DOUBLE. Of FLOAT or DOUBLE it adds in DOUBLE, as Spark's Average. Of an integer
 *    type it adds exactly (128 bits: no overflow, as Spark's DOUBLE sum has none) and divides
 *    the exact sum: equal to Spark's wherever Spark's DOUBLE sum is exact (below 2^53), and
 *    the same on every path and in any order beyond it, where Spark's rounding depends on
 *    the order its partitions add up.
 *  - MIN and MAX keep the input's type; floating values follow Spark's order, NaN above every
 *    number and -0.0 equal to 0.0, and a tie keeps the older value, as Spark's MIN and MAX do.
 *  - No non-NULL input: NULL (COUNT: 0).
 *
 * A partial of aggregate i lives in [[Partials]] at index i: `acc` (a long, or a double's bits),
 * `high` (the upper 64 bits of an exact sum) and `n`, how many non-NULL inputs it holds, which
 * [[AggregateLayout]] keeps. A DECIMAL input has no partial ([[PartialAggregates.of]]): Spark
 * widens its precision as it sums, which the general path does by running Spark's aggregate.
 */
sealed abstract class PartialAggregate extends Serializable {

  /** Spark's result type of the aggregate. */
  def resultType: DataType

  /** Adds one non-NULL input `x` (as [[read]] gives it) to partial i of `p` (its count not yet
   *  raised). */
  def add(p: Partials, i: Int, x: Long): Unit

  /** Merges partial i of `newer` tuples into that of `into`, both holding inputs. */
  def combine(into: Partials, newer: Partials, i: Int): Unit

  /** A non-NULL input of a row in Spark's internal form, as the accumulator holds it. */
  def read(row: InternalRow, ordinal: Int): Long

  /** The same for a value of an external Row (a Long, Int, Double, Float, ...). */
  def readValue(value: Any): Long

  /** The aggregate's value, in [[resultType]] (Spark's internal and external form alike). */
  def result(p: Partials, i: Int): Any

  /** The types of the columns a partial takes in a row (state, shuffle). */
  def partialTypes: Seq[DataType]

  /** Partial i of `p` as the values of its columns. */
  def partialValues(p: Partials, i: Int): Seq[Any]

  /** Loads partial i of `p` from `values` at `at` on, as [[partialValues]] wrote them. */
  def load(values: Int => Any, at: Int, p: Partials, i: Int): Unit
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

/** A partial of one column: the aggregate's value so far, NULL before any input. Loaded, it
 *  counts as one input (its count matters only as "any": AVG and COUNT keep theirs). */
private[aggregate] sealed abstract class OneValue extends PartialAggregate {
  override def partialTypes: Seq[DataType] = Seq(resultType)
  override def partialValues(p: Partials, i: Int): Seq[Any] = Seq(result(p, i))
  override def load(values: Int => Any, at: Int, p: Partials, i: Int): Unit =
    if (values(at) != null) { p.acc(i) = readValue(values(at)); p.n(i) = 1 }
}

/** COUNT(column) or COUNT(*): only the count. */
final case class CountOf(all: Boolean) extends PartialAggregate {
  override def resultType: DataType = LongType
  override def add(p: Partials, i: Int, x: Long): Unit = ()
  override def combine(into: Partials, newer: Partials, i: Int): Unit = ()
  override def read(row: InternalRow, ordinal: Int): Long = 0L
  override def readValue(value: Any): Long = 0L
  override def result(p: Partials, i: Int): Any = p.n(i)
  override def partialTypes: Seq[DataType] = Seq(LongType)
  override def partialValues(p: Partials, i: Int): Seq[Any] = Seq(p.n(i))
  override def load(values: Int => Any, at: Int, p: Partials, i: Int): Unit =
    p.n(i) = values(at).asInstanceOf[Long]
}

/** Adds its integer inputs exactly, in 128 bits: `high` and `acc` (the low 64 bits). */
private[aggregate] sealed trait AddsExactly extends PartialAggregate {
  def inputType: DataType
  /** Adds the 128-bit value (`high`, `low`) to partial i of `p`. */
  @inline protected final def plus(p: Partials, i: Int, high: Long, low: Long): Unit = {
    val sum = p.acc(i) + low
    val carry = if (java.lang.Long.compareUnsigned(sum, low) < 0) 1L else 0L
    p.acc(i) = sum
    p.high(i) += high + carry
  }
  override def add(p: Partials, i: Int, x: Long): Unit = plus(p, i, x >> 63, x)
  override def combine(into: Partials, newer: Partials, i: Int): Unit =
    plus(into, i, newer.high(i), newer.acc(i))
  override def read(row: InternalRow, ordinal: Int): Long = longOf(row, ordinal, inputType)
  override def readValue(value: Any): Long = value.asInstanceOf[Number].longValue()
  /** Whether the exact sum of partial i fits a BIGINT. */
  protected final def fits(p: Partials, i: Int): Boolean = p.high(i) == (p.acc(i) >> 63)
}

/** SUM of an integer type: a BIGINT, exact inside; a sum outside BIGINT raises Spark's
 *  ARITHMETIC_OVERFLOW under ANSI and wraps otherwise (Spark's Sum), also in its row form (a
 *  pane's or a map task's sum so far: one BIGINT, as earlier builds stored it). */
final case class IntegralSum(inputType: DataType, ansi: Boolean) extends OneValue
    with AddsExactly {
  override def resultType: DataType = LongType
  override def result(p: Partials, i: Int): Any = if (p.n(i) == 0) null else {
    if (ansi && !fits(p, i)) {
      throw SqlExtErrors.longOverflow()
    }
    p.acc(i)
  }
  override def load(values: Int => Any, at: Int, p: Partials, i: Int): Unit = {
    super.load(values, at, p, i)
    p.high(i) = p.acc(i) >> 63
  }
}

/** Adds its inputs as DOUBLEs, a FLOAT widened first (as Spark's Sum and Average cast it). */
private[aggregate] sealed trait AddsDoubles extends PartialAggregate {
  def inputType: DataType
  override def add(p: Partials, i: Int, x: Long): Unit =
    p.acc(i) = bits(double(p.acc(i)) + double(x))
  override def combine(into: Partials, newer: Partials, i: Int): Unit =
    into.acc(i) = bits(double(into.acc(i)) + double(newer.acc(i)))
  override def read(row: InternalRow, ordinal: Int): Long = bits(doubleOf(row, ordinal, inputType))
  override def readValue(value: Any): Long = bits(value.asInstanceOf[Number].doubleValue())
}

/** SUM of FLOAT or DOUBLE, in DOUBLE. */
final case class FloatingSum(inputType: DataType) extends OneValue with AddsDoubles {
  override def resultType: DataType = DoubleType
  override def result(p: Partials, i: Int): Any = if (p.n(i) == 0) null else double(p.acc(i))
}

/** AVG of FLOAT or DOUBLE: a DOUBLE sum over the count. Partial: the sum (NULL before any
 *  input), the count. */
final case class FloatingAverage(inputType: DataType) extends AddsDoubles {
  override def resultType: DataType = DoubleType
  override def result(p: Partials, i: Int): Any =
    if (p.n(i) == 0) null else double(p.acc(i)) / p.n(i)
  override def partialTypes: Seq[DataType] = Seq(DoubleType, LongType)
  override def partialValues(p: Partials, i: Int): Seq[Any] =
    Seq(if (p.n(i) == 0) null else double(p.acc(i)), p.n(i))
  override def load(values: Int => Any, at: Int, p: Partials, i: Int): Unit = {
    if (values(at) != null) p.acc(i) = bits(values(at).asInstanceOf[Double])
    p.n(i) = values(at + 1).asInstanceOf[Long]
  }
}

/** AVG of an integer type: the exact sum over the count. Partial: the sum's low 64 bits (NULL
 *  before any input), the count, the sum's high 64 bits. */
final case class IntegralAverage(inputType: DataType) extends AddsExactly {
  override def resultType: DataType = DoubleType
  override def result(p: Partials, i: Int): Any = if (p.n(i) == 0) null else {
    // The exact sum, rounded once: a long when it fits, else through BigInteger.
    val sum = if (fits(p, i)) p.acc(i).toDouble
      else java.math.BigInteger.valueOf(p.high(i)).shiftLeft(64)
        .add(new java.math.BigInteger(java.lang.Long.toUnsignedString(p.acc(i)))).doubleValue()
    sum / p.n(i)
  }
  override def partialTypes: Seq[DataType] = Seq(LongType, LongType, LongType)
  override def partialValues(p: Partials, i: Int): Seq[Any] =
    Seq(if (p.n(i) == 0) null else p.acc(i), p.n(i), p.high(i))
  override def load(values: Int => Any, at: Int, p: Partials, i: Int): Unit = {
    if (values(at) != null) p.acc(i) = values(at).asInstanceOf[Long]
    p.n(i) = values(at + 1).asInstanceOf[Long]
    p.high(i) = values(at + 2).asInstanceOf[Long]
  }
}

/** MIN or MAX of FLOAT or DOUBLE in Spark's order; the result in the input's type. */
final case class FloatingExtreme(inputType: DataType, min: Boolean) extends OneValue {
  override def resultType: DataType = inputType
  @inline private def pick(older: Long, newer: Long): Long = {
    val order = compareDoubles(double(newer), double(older))
    if (if (min) order < 0 else order > 0) newer else older
  }
  override def add(p: Partials, i: Int, x: Long): Unit =
    p.acc(i) = if (p.n(i) == 0) x else pick(p.acc(i), x)
  override def combine(into: Partials, newer: Partials, i: Int): Unit =
    into.acc(i) = pick(into.acc(i), newer.acc(i))
  override def read(row: InternalRow, ordinal: Int): Long = bits(doubleOf(row, ordinal, inputType))
  override def readValue(value: Any): Long = bits(value.asInstanceOf[Number].doubleValue())
  override def result(p: Partials, i: Int): Any = if (p.n(i) == 0) null
    else if (inputType == FloatType) double(p.acc(i)).toFloat else double(p.acc(i))
}

/** MIN or MAX of an integer type; the result in the input's type. */
final case class IntegralExtreme(inputType: DataType, min: Boolean) extends OneValue {
  override def resultType: DataType = inputType
  @inline private def pick(older: Long, newer: Long): Long =
    if (if (min) newer < older else newer > older) newer else older
  override def add(p: Partials, i: Int, x: Long): Unit =
    p.acc(i) = if (p.n(i) == 0) x else pick(p.acc(i), x)
  override def combine(into: Partials, newer: Partials, i: Int): Unit =
    into.acc(i) = pick(into.acc(i), newer.acc(i))
  override def read(row: InternalRow, ordinal: Int): Long = longOf(row, ordinal, inputType)
  override def readValue(value: Any): Long = value.asInstanceOf[Number].longValue()
  override def result(p: Partials, i: Int): Any =
    if (p.n(i) == 0) null else integral(p.acc(i), inputType)
}
