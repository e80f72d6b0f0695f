package io.sqlext.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform

import scala.collection.mutable

/**
 * Physical [[io.sqlext.plans.logical.PackTuples]]: each task packs its rows per key. A pack is
 * the key's rows as Spark's binary rows (UnsafeRow bytes, each after its length), copied as they
 * are: no conversion of a value, and the reducer reads them in place
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
  /** Each row's length before its bytes: a long, so that every row starts 8-byte aligned. */
  val LengthBytes = 8

  /** One key's rows so far: their bytes, each after its length. `key`: the key's values;
   *  `longKey`: a single integral key's value as a long. */
  private final class Pack(val key: Array[Any], val longKey: Long = 0L) {
    var bytes = new Array[Byte](1024)
    var used = 0
    var count = 0

    def add(row: UnsafeRow): Int = {
      val size = row.getSizeInBytes
      val needed = used + LengthBytes + size
      if (needed > bytes.length) {
        bytes = java.util.Arrays.copyOf(bytes, math.max(needed, bytes.length * 2))
      }
      Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + used, size.toLong)
      row.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET + used + LengthBytes)
      used = needed
      count += 1
      LengthBytes + size
    }

    def result(): Array[Byte] = java.util.Arrays.copyOf(bytes, used)
  }

  private final class Packer(keys: Seq[Attribute], input: Seq[Attribute],
      rows: Iterator[InternalRow]) extends Iterator[InternalRow] {
    private val toUnsafe = UnsafeProjection.create(input.map(_.dataType).toArray)
    private val keyTypes = keys.map(_.dataType).toArray
    private val toOutput = UnsafeProjection.create(keyTypes :+ BinaryType)
    private val ready = mutable.Queue.empty[InternalRow]
    private var held = 0L

    // One integral key column (the common case) finds its pack by its long value, without
    // projecting and hashing a key row per tuple; other keys by their key row.
    private val integralKey: Int =
      if (keys.length == 1 && isIntegral(keyTypes(0))) input.indexOf(keys.head) else -1
    private val byLong = mutable.LongMap.empty[Pack]
    private var nullKey: Pack = _
    private val keyOf = UnsafeProjection.create(keys, input)
    private val byRow = new java.util.HashMap[UnsafeRow, Pack]()

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
      held += pack.add(row match {
        case unsafe: UnsafeRow => unsafe
        case other => toUnsafe(other)
      })
      if (pack.count >= MaxPack) {
        forget(pack)
        flush(pack)
      } else if (held >= MaxHeldBytes) flushAll()
    }

    private def packOf(row: InternalRow): Pack =
      if (integralKey >= 0) {
        if (row.isNullAt(integralKey)) {
          if (nullKey == null) nullKey = new Pack(Array(null))
          nullKey
        } else {
          val value = integralValue(row, integralKey, keyTypes(0))
          byLong.getOrElseUpdate(value,
            new Pack(Array(row.get(integralKey, keyTypes(0))), value))
        }
      } else {
        val key = keyOf(row)
        var pack = byRow.get(key)
        if (pack == null) {
          val copy = key.copy()
          pack = new Pack(keyTypes.indices.map(k =>
            if (copy.isNullAt(k)) null else copy.get(k, keyTypes(k))).toArray)
          byRow.put(copy, pack)
        }
        pack
      }

    private def forget(pack: Pack): Unit =
      if (integralKey < 0) byRow.values().remove(pack)
      else if (pack eq nullKey) nullKey = null
      else byLong.remove(pack.longKey)

    private def flushAll(): Unit = {
      byLong.valuesIterator.foreach(flush)
      byLong.clear()
      Option(nullKey).foreach(flush)
      nullKey = null
      byRow.values().forEach(pack => flush(pack))
      byRow.clear()
    }

    private def flush(pack: Pack): Unit = {
      held -= pack.used
      ready += toOutput(new GenericInternalRow(pack.key :+ pack.result())).copy()
    }
  }

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
