package io.sqlext.execution

import io.sqlext.replay.PackFormat
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import scala.collection.mutable

/**
 * Physical [[io.sqlext.plans.logical.PackTuples]]: each task packs its rows per key, column by
 * column in Spark's internal form ([[PackFormat]]), which the reducer reads back as arrays
 * ([[io.sqlext.streaming.input.PackedTuples]]). A key's pack leaves once it holds
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
  /** Bytes a task holds unpacked at most (its packs' tuples and a share per open pack). */
  val MaxHeldBytes: Long = 64L << 20
  /** What an open pack costs beyond its tuples (its column arrays before they grow). */
  private val PackBytes = 2048

  private final class Packer(keys: Seq[Attribute], input: Seq[Attribute],
      rows: Iterator[InternalRow]) extends Iterator[InternalRow] {
    private val layout = PackFormat.Layout(input.map(_.dataType).toArray,
      keys.map(input.indexOf(_)).toArray)
    private val restOf = UnsafeProjection.create(layout.rest.map(input(_)).toSeq, input)
    private val keyTypes = keys.map(_.dataType).toArray
    private val toOutput = UnsafeProjection.create(keyTypes :+ BinaryType)
    private val ready = mutable.Queue.empty[InternalRow]
    private var held = 0L

    // One integral key column (the common case) finds its pack by its long value in a map of
    // primitive longs, and one string key column (a Kafka message key, a name) by its string,
    // without projecting a key row per tuple; other keys by their key row.
    private val integralKey: Int =
      if (keys.length == 1 && isIntegral(keyTypes(0))) input.indexOf(keys.head) else -1
    private val stringKey: Int =
      if (keys.length == 1 && keyTypes(0) == StringType) input.indexOf(keys.head) else -1
    private val singleKey: Int = math.max(integralKey, stringKey) // -1: the key-row path
    private val byLong = new PacksByLong
    private val byString = new java.util.HashMap[UTF8String, Writer]() // keys copied: rows reuse their buffers
    private var nullKey: Writer = _
    private val keyOf = UnsafeProjection.create(keys, input)
    private val byRow = new java.util.HashMap[UnsafeRow, Writer]()

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
      var pack = packOf(row)
      if (pack == null) {
        pack = new Writer(layout, keyOf(row).copy(), restOf)
        held += PackBytes
        if (singleKey >= 0 && row.isNullAt(singleKey)) nullKey = pack
        else if (integralKey >= 0) byLong.put(integralValue(row, integralKey, keyTypes(0)), pack)
        else if (stringKey >= 0) byString.put(row.getUTF8String(stringKey).clone(), pack)
        else byRow.put(pack.key, pack)
      }
      val size = pack.add(row)
      held += size
      pack.added += size
      if (pack.count >= MaxPack) flush(pack) // a key's pack is full: it leaves, and starts over
      else if (held >= MaxHeldBytes) flushAll()
    }

    /** The key's open pack, or null. */
    private def packOf(row: InternalRow): Writer =
      if (singleKey >= 0 && row.isNullAt(singleKey)) nullKey
      else if (integralKey >= 0) byLong.get(integralValue(row, integralKey, keyTypes(0)))
      else if (stringKey >= 0) byString.get(row.getUTF8String(stringKey))
      else byRow.get(keyOf(row))

    private def flushAll(): Unit = {
      byLong.foreach(flush)
      Option(nullKey).foreach(flush)
      byString.values().forEach(pack => flush(pack))
      byRow.values().forEach(pack => flush(pack))
      byLong.clear()
      byString.clear()
      nullKey = null
      byRow.clear()
      held = 0L
    }

    /** Hands on a pack's tuples, if it has any, and empties it. */
    private def flush(pack: Writer): Unit = if (pack.count > 0) {
      val bytes = pack.result()
      held -= pack.added
      pack.added = 0L
      pack.reset()
      val key = pack.key
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

  private type Writer = PackFormat.Writer

  /** Open packs by a long key: open addressing, linear probing; no removal (cleared whole). */
  private final class PacksByLong {
    private var keys = new Array[Long](1024)
    private var values = new Array[Writer](1024)
    private var size = 0

    private def slot(key: Long, mask: Int): Int = {
      val h = key * 0x9E3779B97F4A7C15L // Fibonacci hashing: keys in a row spread out
      (h ^ (h >>> 32)).toInt & mask
    }

    def get(key: Long): Writer = {
      val mask = values.length - 1
      var i = slot(key, mask)
      while (values(i) != null) {
        if (keys(i) == key) return values(i)
        i = (i + 1) & mask
      }
      null
    }

    def put(key: Long, value: Writer): Unit = {
      if (2 * (size + 1) > values.length) grow()
      val mask = values.length - 1
      var i = slot(key, mask)
      while (values(i) != null) i = (i + 1) & mask
      keys(i) = key
      values(i) = value
      size += 1
    }

    private def grow(): Unit = {
      val (oldKeys, oldValues) = (keys, values)
      keys = new Array[Long](oldKeys.length * 2)
      values = new Array[Writer](oldValues.length * 2)
      size = 0
      var i = 0
      while (i < oldValues.length) {
        if (oldValues(i) != null) put(oldKeys(i), oldValues(i))
        i += 1
      }
    }

    def foreach(f: Writer => Unit): Unit = values.foreach(v => if (v != null) f(v))

    def clear(): Unit = {
      java.util.Arrays.fill(values.asInstanceOf[Array[AnyRef]], null)
      size = 0
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
