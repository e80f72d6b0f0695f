package io.sqlext.replay

import io.sqlext.Contract
import io.sqlext.window.{DeltaValues, PaneFiring, PaneSpec, PartitionEvictionPolicy, WindowSpec}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.codegen.{GenerateUnsafeRowJoiner, UnsafeRowJoiner}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

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

  val triggerOrdinal: Int = ordinal(WindowSpec.TriggerDeltaColumn)

  private def typeAt(i: Int): DataType = if (i >= 0) input(i).dataType else NullType

  // Resolved once: these are read for every tuple.
  private val deltaType = typeAt(deltaOrdinal)
  private val triggerType = typeAt(triggerOrdinal)
  private lazy val eventType = typeAt(eventOrdinal)
  private lazy val watermarkType = typeAt(watermarkOrdinal)

  private def isTimestamp(dataType: DataType): Boolean =
    dataType == TimestampType || dataType == TimestampNTZType

  def deltaValue(row: InternalRow): Double = ReplayLayout.numeric(row, deltaOrdinal, deltaType)
  def triggerValue(row: InternalRow): Double =
    ReplayLayout.numeric(row, triggerOrdinal, triggerType)

  /** How the window reads DELTA values from these rows ([[Windows]] builds the window). */
  def deltaValues[T](evict: T => Double, trigger: T => Double): DeltaValues[T] =
    DeltaValues(evict, isTimestamp(deltaType), trigger, isTimestamp(triggerType))

  /** Rows that cannot be windowed: a DELTA value or the replayed arrival time is NULL. */
  def notWindowable(row: InternalRow): Boolean =
    (deltaOrdinal >= 0 && row.isNullAt(deltaOrdinal)) ||
      (eventOrdinal >= 0 && row.isNullAt(eventOrdinal) && watermarkMarker(row).isEmpty) ||
      (triggerOrdinal >= 0 && row.isNullAt(triggerOrdinal)) ||
      (spec.usesClock && row.isNullAt(orderOrdinal))

  val eventOrdinal: Int = ordinal(WindowSpec.EventTimeColumn)
  val watermarkOrdinal: Int = ordinal(WindowSpec.WatermarkColumn)

  /** Event times, watermarks and pane geometry in microseconds. */
  def eventTime(row: InternalRow): Long = ReplayLayout.toMicros(row, eventOrdinal, eventType)
  def watermarkMarker(row: InternalRow): Option[Long] =
    if (watermarkOrdinal < 0 || row.isNullAt(watermarkOrdinal)) None
    else Some(ReplayLayout.toMicros(row, watermarkOrdinal, watermarkType))

  def paneSpec: PaneSpec = PaneSpec.of(spec)

  private lazy val panes = paneSpec
  private val metaNames = meta.map(_.name)
  private val paneBoundType = meta.find(_.name == Contract.PaneStartColumn).orElse(
    meta.find(_.name == Contract.PaneEndColumn)).map(_.dataType).getOrElse(NullType)

  /** The firing's column values, in the order of `meta`. */
  def metaValues(windowId: Long, event: String, paneIndex: Long, first: => Any,
      last: => Any, timing: String = PaneFiring.OnTime): Array[Any] = metaNames.map {
    case WindowSpec.FireColumn | Contract.WindowIdColumn => windowId
    case Contract.PaneStartColumn => if (spec.isPanes) paneBound(panes.start(windowId), paneBoundType)
      else first
    case Contract.PaneEndColumn => if (spec.isPanes) paneBound(panes.end(windowId), paneBoundType)
      else last
    case Contract.PaneTimingColumn => UTF8String.fromString(timing)
    case Contract.PaneIndexColumn => paneIndex
    case Contract.WindowEventColumn => UTF8String.fromString(event)
  }.toArray

  /** A pane bound (microseconds) in the type of PANE_START() / PANE_END(). */
  def paneBound(micros: Long, dataType: DataType): Any = dataType match {
    case TimestampType | TimestampNTZType => micros
    case LongType => micros / 1000000L
    case _ => micros / 1e6
  }

  def clock(row: InternalRow): Long =
    if (spec.usesClock) row.getLong(orderOrdinal) else 0L
  def clockStart(row: InternalRow): Long =
    if (clockStartOrdinal >= 0) row.getLong(clockStartOrdinal) else 0L
  def clockEnd(row: InternalRow): Long =
    if (clockEndOrdinal >= 0) row.getLong(clockEndOrdinal) else 0L

  def isMarker(row: InternalRow): Boolean =
    punctOrdinal >= 0 && !row.isNullAt(punctOrdinal) && row.getBoolean(punctOrdinal)

  def partitionEviction: Option[PartitionEvictionPolicy] = spec.partitionEvictionPolicy

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

object ReplayLayout {
  /** A timestamp's microseconds, or a number of seconds in microseconds. */
  def toMicros(row: InternalRow, ordinal: Int, dataType: DataType): Long = dataType match {
    case TimestampType | TimestampNTZType => row.getLong(ordinal)
    case LongType | IntegerType | ShortType | ByteType =>
      math.round(numeric(row, ordinal, dataType)) * 1000000L
    case _ => math.round(numeric(row, ordinal, dataType) * 1e6)
  }

  /** A numeric or timestamp column as a double (timestamps in microseconds). */
  def numeric(row: InternalRow, ordinal: Int, dataType: DataType): Double = dataType match {
    case IntegerType | DateType => row.getInt(ordinal).toDouble
    case LongType | TimestampType | TimestampNTZType => row.getLong(ordinal).toDouble
    case DoubleType => row.getDouble(ordinal)
    case FloatType => row.getFloat(ordinal).toDouble
    case ShortType => row.getShort(ordinal).toDouble
    case ByteType => row.getByte(ordinal).toDouble
    case d: DecimalType => row.getDecimal(ordinal, d.precision, d.scale).toDouble
    case other => throw new IllegalStateException(s"DELTA over $other")
  }
}
