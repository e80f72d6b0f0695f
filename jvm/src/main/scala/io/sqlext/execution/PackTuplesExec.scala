package io.sqlext.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.types._

import scala.collection.mutable

/**
 * Physical [[io.sqlext.plans.logical.PackTuples]]: each task packs its rows per key, column by
 * column in Spark's internal form ([[PackFormat]]), which the reducer reads back as arrays
 * ([[io.sqlext.streaming.PackedTuples]]). A key's pack leaves once it holds
 * [[PackTuplesExec.MaxPack]] tuples, and every pack once the task holds
 * [[PackTuplesExec.MaxHeldBytes]], so a task's memory stays bounded.
 */
case class PackTuplesExec(keys: Seq[Attribute], tuples: Attribute, child: SparkPlan)
    extends UnaryExecNode {

  override def output: Seq[Attribute] = keys :+ tuples

  override def producedAttributes: AttributeSet = AttributeSet(tuples)

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def doExecute(): RDD[InternalRow] = {
    val (keyAttrs, input) = (keys, child.output)
    child.execute().mapPartitions(rows => new PackTuplesExec.Packer(keyAttrs, input, rows))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): PackTuplesExec =
    copy(child = newChild)
}

object PackTuplesExec {
  /** Tuples of one key per pack at most. */
  val MaxPack = 4096
  /** Bytes of tuples a task holds unpacked at most (of all keys). */
  val MaxHeldBytes: Long = 64L << 20

  private final class Packer(keys: Seq[Attribute], input: Seq[Attribute],
      rows: Iterator[InternalRow]) extends Iterator[InternalRow] {
    private val layout = PackFormat.Layout(input.map(_.dataType).toArray,
      keys.map(input.indexOf(_)).toArray)
    private val restOf = UnsafeProjection.create(layout.rest.map(input(_)).toSeq, input)
    private val keyTypes = keys.map(_.dataType).toArray
    private val toOutput = UnsafeProjection.create(keyTypes :+ BinaryType)
    private val ready = mutable.Queue.empty[InternalRow]
    private var held = 0L

    // One integral key column (the common case) finds its pack by its long value, without
    // projecting and hashing a key row per tuple; other keys by their key row.
    private val integralKey: Int =
      if (keys.length == 1 && isIntegral(keyTypes(0))) input.indexOf(keys.head) else -1
    private val byLong = new java.util.HashMap[java.lang.Long, Pack]()
    private var nullKey: Pack = _
    private val keyOf = UnsafeProjection.create(keys, input)
    private val byRow = new java.util.HashMap[UnsafeRow, Pack]()
    // The last tuple's pack: a task's rows of one key often come together.
    private var lastLong = 0L
    private var last: Pack = _

    override def hasNext: Boolean = {
      while (ready.isEmpty && rows.hasNext) add(rows.next())
      if (ready.isEmpty && held > 0) flushAll()
      ready.nonEmpty
    }

    override def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException
      ready.dequeue()
    }

    private def add(row: InternalRow): Unit = {
      val pack = packOf(row)
      held += pack.writer.add(row)
      if (pack.writer.count >= MaxPack) {
        forget(pack)
        flush(pack)
      } else if (held >= MaxHeldBytes) flushAll()
    }

    private def packOf(row: InternalRow): Pack =
      if (integralKey >= 0) {
        if (row.isNullAt(integralKey)) {
          if (nullKey == null) nullKey = newPack(row, 0L)
          nullKey
        } else {
          val value = integralValue(row, integralKey, keyTypes(0))
          if (last != null && value == lastLong) return last
          var pack = byLong.get(value)
          if (pack == null) {
            pack = newPack(row, value)
            byLong.put(value, pack)
          }
          last = pack
          lastLong = value
          pack
        }
      } else {
        val key = keyOf(row)
        var pack = byRow.get(key)
        if (pack == null) {
          pack = newPack(row, 0L)
          byRow.put(pack.writer.key, pack)
        }
        pack
      }

    private def newPack(row: InternalRow, longKey: Long): Pack =
      new Pack(new PackFormat.Writer(layout, keyOf(row).copy(), restOf), longKey)

    private def forget(pack: Pack): Unit = {
      if (pack eq last) last = null
      if (integralKey < 0) byRow.remove(pack.writer.key)
      else if (pack eq nullKey) nullKey = null
      else byLong.remove(pack.longKey)
    }

    private def flushAll(): Unit = {
      byLong.values().forEach(pack => flush(pack))
      byLong.clear()
      Option(nullKey).foreach(flush)
      nullKey = null
      byRow.values().forEach(pack => flush(pack))
      byRow.clear()
      last = null
    }

    private def flush(pack: Pack): Unit = {
      val bytes = pack.writer.result()
      held -= bytes.length
      val key = pack.writer.key
      val values = new Array[Any](keyTypes.length + 1)
      var k = 0
      while (k < keyTypes.length) {
        values(k) = if (key.isNullAt(k)) null else key.get(k, keyTypes(k))
        k += 1
      }
      values(k) = bytes
      ready += toOutput(new GenericInternalRow(values)).copy()
    }
  }

  /** A pack being filled, and its key as a long when it is one integral column. */
  private final class Pack(val writer: PackFormat.Writer, val longKey: Long)

  private def isIntegral(dataType: DataType): Boolean = dataType match {
    case LongType | IntegerType | ShortType | ByteType | DateType | TimestampType |
         TimestampNTZType => true
    case _ => false
  }

  private def integralValue(row: InternalRow, ordinal: Int, dataType: DataType): Long =
    dataType match {
      case IntegerType | DateType => row.getInt(ordinal).toLong
      case ShortType => row.getShort(ordinal).toLong
      case ByteType => row.getByte(ordinal).toLong
      case _ => row.getLong(ordinal)
    }
}
