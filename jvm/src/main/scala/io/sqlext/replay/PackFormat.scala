package io.sqlext.replay

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform

/**
 * The bytes of one pack of [[io.sqlext.plans.logical.PackTuples]]: one key's tuples of one map
 * task, column by column. The key's values come once (an UnsafeRow of the key columns); every
 * other column of a common fixed-width type is its values one after another (8 bytes for
 * doubles, 4 for ints and dates, 1 for bytes and booleans) after a bitmap of its NULLs when it
 * has any; the remaining columns (strings, decimals, nested types, ...) of each tuple are one
 * UnsafeRow. Longs and timestamps are each the difference to the one before, zigzag varint
 * encoded: the arrival rank, an event time or a file rank rises in small steps within a pack,
 * so they take one to three bytes instead of eight. Every byte of a pack is hashed (Spark's
 * shuffle checksum), compressed, written and read again, so a tuple costs about its values'
 * bytes (11 for a SUM over a DOUBLE with its arrival rank), not a row, and the reader fills
 * each column's array in one pass.
 *
 * The writer ([[PackFormat.Writer]], map side) and the reader ([[PackFormat.read]], in the
 * window processor) share this layout ([[PackFormat.Layout]]).
 */
object PackFormat {
  // How a column of the tuples is held.
  val Longs = 0
  val Doubles = 1
  val Ints = 2
  val Bytes = 3
  val Rest = 4 // in each tuple's UnsafeRow of the remaining columns
  val Key = 5 // the pack's key: one value for all its tuples

  /** The kinds of the columns of `input` (key columns at `keys`), the remaining columns'
   *  ordinals (in `input` order) and each column's ordinal among them (-1 if none). */
  final case class Layout(input: Array[DataType], keys: Array[Int]) {
    val kinds: Array[Int] = input.indices.map { i =>
      if (keys.contains(i)) Key else input(i) match {
        case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => Longs
        case DoubleType => Doubles
        case IntegerType | DateType | _: YearMonthIntervalType => Ints
        case ByteType | BooleanType => Bytes
        case _ => Rest
      }
    }.toArray
    /** The columns stored as arrays, in the order of their bytes. */
    val arrays: Array[Int] = input.indices.filter(i => kinds(i) < Rest).toArray
    val rest: Array[Int] = input.indices.filter(i => kinds(i) == Rest).toArray
    val restOrdinal: Array[Int] = input.indices.map(i => rest.indexOf(i)).toArray
    def width(i: Int): Int = kinds(i) match {
      case Longs | Doubles => 8
      case Ints => 4
      case _ => 1
    }
    /** The array columns' kinds, in their order, and their bytes per tuple before encoding. */
    val arrayKinds: Array[Int] = arrays.map(kinds)
    val arrayBooleans: Array[Boolean] = arrays.map(input(_) == BooleanType)
    val arrayWidth: Int = arrays.map(width).sum
  }

  /** One key's tuples so far (map side): each array column's values and NULL bitmap, and the
   *  remaining columns' rows (each after its length). */
  final class Writer(layout: Layout, val key: UnsafeRow, restOf: UnsafeProjection) {
    private val arrays = layout.arrays
    private var capacity = 64
    private val longs = arrays.map(i => if (layout.kinds(i) == Longs) new Array[Long](capacity)
      else null)
    private val doubles = arrays.map(i => if (layout.kinds(i) == Doubles) {
      new Array[Double](capacity)
    } else null)
    private val ints = arrays.map(i => if (layout.kinds(i) == Ints) new Array[Int](capacity)
      else null)
    private val bytes = arrays.map(i => if (layout.kinds(i) == Bytes) new Array[Byte](capacity)
      else null)
    private val nulls = new Array[Array[Long]](arrays.length)
    private var restBytes: Array[Byte] = if (layout.rest.nonEmpty) new Array[Byte](1024) else null
    private var restUsed = 0
    var count = 0
    /** Bytes of its tuples as the map task counts what it holds (before encoding). */
    var added = 0L

    private val kinds = layout.arrayKinds
    private val booleans = layout.arrayBooleans

    /** Adds a tuple (a hot path: every tuple of a micro-batch); the bytes it takes. */
    def add(row: InternalRow): Int = {
      if (count == capacity) grow()
      var j = 0
      while (j < arrays.length) {
        val i = arrays(j)
        if (row.isNullAt(i)) setNull(j)
        else kinds(j) match {
          case Longs => longs(j)(count) = row.getLong(i)
          case Doubles => doubles(j)(count) = row.getDouble(i)
          case Ints => ints(j)(count) = row.getInt(i)
          case _ => bytes(j)(count) =
            if (booleans(j)) { if (row.getBoolean(i)) 1 else 0 } else row.getByte(i)
        }
        j += 1
      }
      count += 1
      if (restBytes == null) layout.arrayWidth else layout.arrayWidth + addRest(restOf(row))
    }

    private def setNull(j: Int): Unit = {
      if (nulls(j) == null) nulls(j) = new Array[Long](words(capacity))
      nulls(j)(count >>> 6) |= 1L << (count & 63)
      // A NULL long repeats the value before it: a difference of 0, one byte.
      if (longs(j) != null && count > 0) longs(j)(count) = longs(j)(count - 1)
    }

    private def addRest(row: UnsafeRow): Int = {
      val size = row.getSizeInBytes
      val needed = restUsed + 4 + size
      if (needed > restBytes.length) {
        restBytes = java.util.Arrays.copyOf(restBytes, math.max(needed, restBytes.length * 2))
      }
      Platform.putInt(restBytes, Platform.BYTE_ARRAY_OFFSET + restUsed, size)
      row.writeToMemory(restBytes, Platform.BYTE_ARRAY_OFFSET + restUsed + 4)
      restUsed = needed
      4 + size
    }

    /** Empties the pack (after `result`) for the key's next tuples, with arrays of the first
     *  size again (a key's pack need not keep the memory of its busiest moment). */
    def reset(): Unit = {
      count = 0
      restUsed = 0
      java.util.Arrays.fill(nulls.asInstanceOf[Array[AnyRef]], null)
      if (capacity > 64) {
        capacity = 64
        var j = 0
        while (j < arrays.length) {
          if (longs(j) != null) longs(j) = new Array[Long](capacity)
          if (doubles(j) != null) doubles(j) = new Array[Double](capacity)
          if (ints(j) != null) ints(j) = new Array[Int](capacity)
          if (bytes(j) != null) bytes(j) = new Array[Byte](capacity)
          j += 1
        }
      }
    }

    private def grow(): Unit = {
      capacity *= 2
      var j = 0
      while (j < arrays.length) {
        if (longs(j) != null) longs(j) = java.util.Arrays.copyOf(longs(j), capacity)
        if (doubles(j) != null) doubles(j) = java.util.Arrays.copyOf(doubles(j), capacity)
        if (ints(j) != null) ints(j) = java.util.Arrays.copyOf(ints(j), capacity)
        if (bytes(j) != null) bytes(j) = java.util.Arrays.copyOf(bytes(j), capacity)
        if (nulls(j) != null) nulls(j) = java.util.Arrays.copyOf(nulls(j), words(capacity))
        j += 1
      }
    }

    /** The pack's bytes: count, key row, each array column (NULL words, then values), then
     *  the remaining columns' rows. */
    def result(): Array[Byte] = {
      var size = 4 + 4 + key.getSizeInBytes
      arrays.indices.foreach { j =>
        size += 4 + (if (nulls(j) == null) 0 else 8 * words(count)) +
          (if (longs(j) != null) 4 + Varints.size(longs(j), count)
           else count * layout.width(arrays(j)))
      }
      size += restUsed
      val out = new Array[Byte](size)
      var at = Platform.BYTE_ARRAY_OFFSET
      Platform.putInt(out, at, count)
      Platform.putInt(out, at + 4, key.getSizeInBytes)
      key.writeToMemory(out, at + 8)
      at += 8 + key.getSizeInBytes
      arrays.indices.foreach { j =>
        val nullWords = if (nulls(j) == null) 0 else words(count)
        Platform.putInt(out, at, nullWords)
        at += 4
        if (nullWords > 0) {
          Platform.copyMemory(nulls(j), Platform.LONG_ARRAY_OFFSET, out, at, 8L * nullWords)
          at += 8 * nullWords
        }
        if (longs(j) != null) {
          val length = Varints.write(longs(j), count, out, at + 4)
          Platform.putInt(out, at, length)
          at += 4 + length
        } else {
          val length = count.toLong * layout.width(arrays(j))
          val (from, offset) = layout.kinds(arrays(j)) match {
            case Doubles => (doubles(j), Platform.DOUBLE_ARRAY_OFFSET)
            case Ints => (ints(j), Platform.INT_ARRAY_OFFSET)
            case _ => (bytes(j), Platform.BYTE_ARRAY_OFFSET)
          }
          Platform.copyMemory(from, offset, out, at, length)
          at += length.toInt
        }
      }
      if (restUsed > 0) Platform.copyMemory(restBytes, Platform.BYTE_ARRAY_OFFSET, out, at, restUsed)
      out
    }
  }

  private def words(count: Int): Int = (count + 63) >>> 6

  /** A pack read back: its columns as arrays (by ordinal of the input), ready for
   *  [[io.sqlext.streaming.input.PackedRow]]s. */
  final class Columns(val layout: Layout, val count: Int) {
    val kinds: Array[Int] = layout.kinds
    val restOrdinal: Array[Int] = layout.restOrdinal
    val longs = new Array[Array[Long]](layout.input.length)
    val doubles = new Array[Array[Double]](layout.input.length)
    val ints = new Array[Array[Int]](layout.input.length)
    val bytes = new Array[Array[Byte]](layout.input.length)
    /** NULL bitmaps of the array columns that have NULLs, and all set for a NULL key. */
    val nulls = new Array[Array[Long]](layout.input.length)
    /** The key's values (internal form) at the key columns' ordinals. */
    val constants = new Array[Any](layout.input.length)
    /** Each tuple's row of the remaining columns, when there are any. */
    var rest: Array[UnsafeRow] = _

    def isNull(ordinal: Int, index: Int): Boolean = {
      val n = nulls(ordinal)
      if (n != null) (n(index >>> 6) & (1L << index)) != 0 // (a long shifts by index mod 64)
      else restOrdinal(ordinal) >= 0 && rest(index).isNullAt(restOrdinal(ordinal))
    }
  }

  /** The number of tuples in a pack's bytes. */
  def count(bytes: Array[Byte]): Int = Platform.getInt(bytes, Platform.BYTE_ARRAY_OFFSET)

  /** The columns of a pack's bytes. */
  def read(layout: Layout, bytes: Array[Byte]): Columns = {
    var at = Platform.BYTE_ARRAY_OFFSET
    val count = Platform.getInt(bytes, at)
    val keySize = Platform.getInt(bytes, at + 4)
    val columns = new Columns(layout, count)
    val key = new UnsafeRow(layout.keys.length)
    key.pointTo(bytes, at + 8, keySize)
    layout.keys.indices.foreach { k =>
      val i = layout.keys(k)
      if (key.isNullAt(k)) columns.nulls(i) = Array.fill(words(count))(-1L)
      else columns.constants(i) = key.get(k, layout.input(i))
    }
    at += 8 + keySize
    layout.arrays.foreach { i =>
      val nullWords = Platform.getInt(bytes, at)
      at += 4
      if (nullWords > 0) {
        val n = new Array[Long](nullWords)
        Platform.copyMemory(bytes, at, n, Platform.LONG_ARRAY_OFFSET, 8L * nullWords)
        columns.nulls(i) = n
        at += 8 * nullWords
      }
      val length = if (layout.kinds(i) == Longs) Platform.getInt(bytes, at).toLong
        else count.toLong * layout.width(i)
      layout.kinds(i) match {
        case Longs =>
          at += 4
          columns.longs(i) = Varints.read(bytes, at, count)
        case Doubles =>
          columns.doubles(i) = new Array[Double](count)
          Platform.copyMemory(bytes, at, columns.doubles(i), Platform.DOUBLE_ARRAY_OFFSET, length)
        case Ints =>
          columns.ints(i) = new Array[Int](count)
          Platform.copyMemory(bytes, at, columns.ints(i), Platform.INT_ARRAY_OFFSET, length)
        case _ =>
          columns.bytes(i) = new Array[Byte](count)
          Platform.copyMemory(bytes, at, columns.bytes(i), Platform.BYTE_ARRAY_OFFSET, length)
      }
      at += length.toInt
    }
    if (layout.rest.nonEmpty) {
      columns.rest = new Array[UnsafeRow](count)
      var t = 0
      while (t < count) {
        val size = Platform.getInt(bytes, at)
        val row = new UnsafeRow(layout.rest.length)
        row.pointTo(bytes, at + 4, size)
        columns.rest(t) = row
        at += 4 + size
        t += 1
      }
    }
    columns
  }

  /** Longs as zigzag varints of their differences (byte offsets are Platform's, into byte
   *  arrays). */
  private object Varints {
    private def zigzag(d: Long): Long = (d << 1) ^ (d >> 63)

    private def length(z: Long): Int = (63 - java.lang.Long.numberOfLeadingZeros(z | 1L)) / 7 + 1

    def size(values: Array[Long], count: Int): Int = {
      var (total, previous, i) = (0, 0L, 0)
      while (i < count) {
        total += length(zigzag(values(i) - previous))
        previous = values(i)
        i += 1
      }
      total
    }

    /** Writes the first `count` values at `offset`; the bytes written. */
    def write(values: Array[Long], count: Int, out: Array[Byte], offset: Long): Int = {
      var (at, previous, i) = (offset, 0L, 0)
      while (i < count) {
        var z = zigzag(values(i) - previous)
        while ((z & ~0x7FL) != 0) {
          Platform.putByte(out, at, ((z & 0x7F) | 0x80).toByte)
          at += 1
          z >>>= 7
        }
        Platform.putByte(out, at, z.toByte)
        at += 1
        previous = values(i)
        i += 1
      }
      (at - offset).toInt
    }

    def read(bytes: Array[Byte], offset: Long, count: Int): Array[Long] = {
      val values = new Array[Long](count)
      var (at, previous, i) = (offset, 0L, 0)
      while (i < count) {
        var z = 0L
        var shift = 0
        var b = Platform.getByte(bytes, at)
        while (b < 0) {
          z |= (b & 0x7FL) << shift
          shift += 7
          at += 1
          b = Platform.getByte(bytes, at)
        }
        z |= b.toLong << shift
        at += 1
        previous += (z >>> 1) ^ -(z & 1)
        values(i) = previous
        i += 1
      }
      values
    }
  }
}
