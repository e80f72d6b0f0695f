package io.sqlext.streaming.input

import io.sqlext.replay.PackFormat
import io.sqlext.replay.PackFormat._
import org.apache.spark.sql.catalyst.expressions.BaseGenericInternalRow

/**
 * Tuple `index` of a pack read back ([[PackFormat.Columns]]), as an InternalRow of the window's
 * input: each value read from its column's array where it lies, the common getters unboxed. The
 * state machines hold these; nothing is copied until a tuple is kept in state (as a Row).
 */
final class PackedRow(pack: PackFormat.Columns, index: Int) extends BaseGenericInternalRow {
  private def kind(ordinal: Int): Int = pack.kinds(ordinal)

  override def numFields: Int = pack.kinds.length

  override def isNullAt(ordinal: Int): Boolean = pack.isNull(ordinal, index)

  override def getLong(ordinal: Int): Long = kind(ordinal) match {
    case Longs => pack.longs(ordinal)(index)
    case _ => super.getLong(ordinal)
  }

  override def getDouble(ordinal: Int): Double = kind(ordinal) match {
    case Doubles => pack.doubles(ordinal)(index)
    case _ => super.getDouble(ordinal)
  }

  override def getInt(ordinal: Int): Int = kind(ordinal) match {
    case Ints => pack.ints(ordinal)(index)
    case _ => super.getInt(ordinal)
  }

  override def getBoolean(ordinal: Int): Boolean = kind(ordinal) match {
    case Bytes => pack.bytes(ordinal)(index) != 0
    case _ => super.getBoolean(ordinal)
  }

  override protected def genericGet(ordinal: Int): Any = if (isNullAt(ordinal)) null
    else kind(ordinal) match {
      case Longs => pack.longs(ordinal)(index)
      case Doubles => pack.doubles(ordinal)(index)
      case Ints => pack.ints(ordinal)(index)
      case Bytes =>
        val b = pack.bytes(ordinal)(index)
        if (pack.layout.input(ordinal) == org.apache.spark.sql.types.BooleanType) b != 0 else b
      case Rest => pack.rest(index).get(pack.restOrdinal(ordinal), pack.layout.input(ordinal))
      case _ => pack.constants(ordinal)
    }

  /** The one write: [[MicroBatchOrder]] renumbers the arrival column (a long) in place. */
  override def setLong(ordinal: Int, value: Long): Unit = kind(ordinal) match {
    case Longs if !isNullAt(ordinal) => pack.longs(ordinal)(index) = value
    case _ => throw new UnsupportedOperationException(s"read-only column $ordinal")
  }

  override def setNullAt(i: Int): Unit = throw new UnsupportedOperationException("read-only")
  override def update(i: Int, value: Any): Unit =
    throw new UnsupportedOperationException("read-only")
}
