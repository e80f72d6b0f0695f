package io.sqlext.replay

import io.sqlext.streaming.input.PackedRow
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow,
  UnsafeProjection}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

class PackFormatSuite extends AnyFunSuite {
  // A key column, array columns of every kind (with NULLs), and remaining columns.
  private val types: Array[DataType] = Array(LongType, DoubleType, TimestampType, IntegerType,
    BooleanType, StringType, LongType, DecimalType(20, 2), DateType)
  private val layout = PackFormat.Layout(types, keys = Array(0))

  private def roundTrip(rows: Seq[InternalRow]): Seq[InternalRow] = {
    val keyRow = UnsafeProjection.create(Array[DataType](LongType))
      .apply(new GenericInternalRow(Array[Any](rows.head.getLong(0)))).copy()
    val writer = new PackFormat.Writer(layout, keyRow, UnsafeProjection.create(
      layout.rest.map(i => BoundReference(i, types(i), nullable = true)).toSeq))
    rows.foreach(writer.add)
    val columns = PackFormat.read(layout, writer.result())
    assert(columns.count == rows.length)
    (0 until columns.count).map(i => new PackedRow(columns, i))
  }

  private def values(row: InternalRow): Seq[Any] = types.indices.map(i =>
    if (row.isNullAt(i)) null else row.get(i, types(i)) match {
      case d: Decimal => d.toJavaBigDecimal
      case other => other
    })

  test("every kind of column reads back as written, NULLs and extremes included") {
    val random = new Random(11)
    val longs = Seq(0L, 1L, -1L, Long.MaxValue, Long.MinValue, 1L << 40, -(1L << 50))
    val rows = (0 until 300).map { n =>
      def maybe(value: Any) = if (random.nextInt(7) == 0) null else value
      new GenericInternalRow(Array[Any](
        42L,
        maybe(random.nextDouble()),
        maybe(1700000000000000L + n * 1000000L + random.nextInt(3)),
        maybe(random.nextInt()),
        maybe(random.nextBoolean()),
        maybe(UTF8String.fromString(s"s$n")),
        maybe(longs(random.nextInt(longs.length)) + random.nextInt(5)),
        maybe(Decimal(BigDecimal(random.nextInt(100000)) / 100, 20, 2)),
        maybe(19000 + n)))
    }
    val back = roundTrip(rows)
    rows.zip(back).foreach { case (written, read) => assert(values(read) == values(written)) }
    assert(back.forall(_.getLong(0) == 42L))
  }

  test("a writer emptied by reset packs the next tuples alone") {
    val keyRow = UnsafeProjection.create(Array[DataType](LongType))
      .apply(new GenericInternalRow(Array[Any](1L))).copy()
    val writer = new PackFormat.Writer(layout, keyRow, UnsafeProjection.create(
      layout.rest.map(i => BoundReference(i, types(i), nullable = true)).toSeq))
    def row(n: Int) = new GenericInternalRow(Array[Any](1L, n.toDouble, n.toLong * 1000000L,
      if (n % 2 == 0) null else n, true, UTF8String.fromString("x"), n.toLong, null, n))
    (0 until 200).foreach(n => writer.add(row(n)))
    writer.result()
    writer.reset()
    (500 until 503).foreach(n => writer.add(row(n)))
    val back = PackFormat.read(layout, writer.result())
    assert(back.count == 3)
    assert((0 until 3).map(i => new PackedRow(back, i).getDouble(1)) == Seq(500.0, 501.0, 502.0))
    assert((0 until 3).map(i => new PackedRow(back, i).isNullAt(3)) == Seq(true, false, true))
  }

  test("a pack of one tuple, every value NULL but the key") {
    val row = new GenericInternalRow(Array[Any](7L) ++ Array.fill[Any](types.length - 1)(null))
    val back = roundTrip(Seq(row)).head
    assert(back.getLong(0) == 7L)
    assert((1 until types.length).forall(back.isNullAt))
  }
}
