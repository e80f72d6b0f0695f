package io.sqlext.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.catalyst.util.{ArrayData, GenericArrayData}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.types._

import scala.collection.mutable

/**
 * Physical [[io.sqlext.plans.logical.PackTuples]]: each task packs its rows per key, in
 * Spark's internal form (no conversion of a row to a Row; longs, ints and doubles into primitive
 * arrays). A key's pack leaves once it holds [[PackTuplesExec.MaxPack]] tuples, and every pack
 * once the task holds [[PackTuplesExec.MaxHeld]], so a task's memory stays bounded.
 */
case class PackTuplesExec(keys: Seq[Attribute], packed: Seq[Attribute], child: SparkPlan)
    extends UnaryExecNode {

  override def output: Seq[Attribute] = keys ++ packed

  override def producedAttributes: AttributeSet = AttributeSet(packed)

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def doExecute(): RDD[InternalRow] = {
    val (keyAttrs, input, out) = (keys, child.output, output)
    child.execute().mapPartitions(rows => new PackTuplesExec.Packer(keyAttrs, input, out,
      rows))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): PackTuplesExec =
    copy(child = newChild)
}

object PackTuplesExec {
  /** Tuples of one key per pack at most. */
  val MaxPack = 4096
  /** Tuples a task holds unpacked at most (of all keys). */
  val MaxHeld = 262144

  private final class Packer(keys: Seq[Attribute], input: Seq[Attribute], output: Seq[Attribute],
      rows: Iterator[InternalRow]) extends Iterator[InternalRow] {
    private val keyOf = UnsafeProjection.create(keys, input)
    private val keyTypes = keys.map(_.dataType).toArray
    private val values = input.zipWithIndex.filterNot(a => keys.contains(a._1))
      .map { case (a, i) => (i, a.dataType) }.toArray
    private val toUnsafe = UnsafeProjection.create(output.map(_.dataType).toArray)
    private val open = new java.util.LinkedHashMap[UnsafeRow, Array[Column]]()
    private val ready = mutable.Queue.empty[InternalRow]
    private var held = 0

    override def hasNext: Boolean = {
      while (ready.isEmpty && rows.hasNext) add(rows.next())
      if (ready.isEmpty && !open.isEmpty) flushAll()
      ready.nonEmpty
    }

    override def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException
      ready.dequeue()
    }

    private def add(row: InternalRow): Unit = {
      val key = keyOf(row)
      var columns = open.get(key)
      if (columns == null) {
        columns = values.map { case (_, t) => Column(t) }
        open.put(key.copy(), columns)
      }
      var j = 0
      while (j < columns.length) { columns(j).add(row, values(j)._1); j += 1 }
      held += 1
      if (columns(0).length >= MaxPack) {
        open.remove(key)
        flush(key, columns) // read at once: the projection's row is not reused before
      } else if (held >= MaxHeld) flushAll()
    }

    private def flushAll(): Unit = {
      open.forEach((key, columns) => flush(key, columns))
      open.clear()
    }

    private def flush(key: UnsafeRow, columns: Array[Column]): Unit = {
      held -= columns(0).length
      val row = new Array[Any](keyTypes.length + columns.length)
      var k = 0
      while (k < keyTypes.length) {
        row(k) = if (key.isNullAt(k)) null else key.get(k, keyTypes(k))
        k += 1
      }
      var j = 0
      while (j < columns.length) { row(k + j) = columns(j).result(); j += 1 }
      ready += toUnsafe(new GenericInternalRow(row)).copy()
    }
  }

  /** One column's values of one key: primitive arrays for the common types, nulls aside. */
  private abstract class Column {
    var length = 0
    private var nulls: java.util.BitSet = _

    final def add(row: InternalRow, i: Int): Unit = {
      if (row.isNullAt(i)) {
        if (nulls == null) nulls = new java.util.BitSet()
        nulls.set(length)
        addNull()
      } else addValue(row, i)
      length += 1
    }

    protected def addValue(row: InternalRow, i: Int): Unit
    protected def addNull(): Unit
    /** The values as one array; boxed (with their NULLs) only when there are NULLs. */
    protected def values(): Array[_]
    protected def primitive(values: Array[_]): ArrayData

    final def result(): ArrayData = {
      val all = values()
      if (nulls == null) primitive(all)
      else new GenericArrayData(Array.tabulate[Any](length)(n =>
        if (nulls.get(n)) null else all(n)))
    }
  }

  private object Column {
    def apply(dataType: DataType): Column = dataType match {
      case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => new Longs
      case IntegerType | DateType | _: YearMonthIntervalType => new Ints
      case DoubleType => new Doubles
      case other => new Objects(other)
    }
  }

  // One class per primitive type, alike by design: a generic one would box every value.
  private final class Longs extends Column {
    private val builder = new mutable.ArrayBuilder.ofLong
    override protected def addValue(row: InternalRow, i: Int): Unit = builder += row.getLong(i)
    override protected def addNull(): Unit = builder += 0L
    override protected def values(): Array[_] = builder.result()
    override protected def primitive(values: Array[_]): ArrayData =
      UnsafeArrayData.fromPrimitiveArray(values.asInstanceOf[Array[Long]])
  }

  private final class Ints extends Column {
    private val builder = new mutable.ArrayBuilder.ofInt
    override protected def addValue(row: InternalRow, i: Int): Unit = builder += row.getInt(i)
    override protected def addNull(): Unit = builder += 0
    override protected def values(): Array[_] = builder.result()
    override protected def primitive(values: Array[_]): ArrayData =
      UnsafeArrayData.fromPrimitiveArray(values.asInstanceOf[Array[Int]])
  }

  private final class Doubles extends Column {
    private val builder = new mutable.ArrayBuilder.ofDouble
    override protected def addValue(row: InternalRow, i: Int): Unit = builder += row.getDouble(i)
    override protected def addNull(): Unit = builder += 0.0
    override protected def values(): Array[_] = builder.result()
    override protected def primitive(values: Array[_]): ArrayData =
      UnsafeArrayData.fromPrimitiveArray(values.asInstanceOf[Array[Double]])
  }

  /** Any other type, each value copied out of the (reused) input row. */
  private final class Objects(dataType: DataType) extends Column {
    private val builder = mutable.ArrayBuffer.empty[Any]
    override protected def addValue(row: InternalRow, i: Int): Unit =
      builder += InternalRow.copyValue(row.get(i, dataType))
    override protected def addNull(): Unit = builder += null
    override protected def values(): Array[_] = builder.toArray[Any]
    override protected def primitive(values: Array[_]): ArrayData =
      new GenericArrayData(values.asInstanceOf[Array[Any]])
  }
}
