package io.sqlext.streaming.input

import io.sqlext.plans.logical.PackTuples
import io.sqlext.replay.{ArrivalOrder, PackFormat}
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.sqlext.CatalystFrames
import org.apache.spark.sql.types.StructType

/**
 * A TUMBLING or SLIDING micro-batch's tuples packed before the shuffle: each map task hands on,
 * per partition key, one row holding the key and its tuples column by column ([[PackTuples]],
 * [[PackFormat]]), not one row per tuple. The shuffle, Spark's sort by key ahead of the state
 * operator and the decoding cost per key and task instead of per tuple, and the processor reads
 * the tuples where they lie ([[PackedRow]]): no conversion of a value to a Row (those were most
 * of a backlog's stateful stage). The tuples' own columns (arrival rank, ORDER BY value, file) put them in
 * arrival order there ([[MicroBatchOrder]]), so the packing order never matters.
 */
final class PackedTuples(input: StructType, keyColumns: Seq[String]) extends Serializable {
  private val layout = PackFormat.Layout(input.fields.map(_.dataType),
    keyColumns.map(input.fieldIndex).toArray)

  /** The key columns as they are, then the key's tuples (all of `input`'s columns). */
  def pack(tuples: DataFrame): DataFrame = CatalystFrames.of(tuples.sparkSession,
    PackTuples(keyColumns, tuples.queryExecution.analyzed))

  /** The tuples of packed rows, read back column by column ([[PackFormat]]): InternalRows of
   *  `input` over the packs' arrays, in arrival order when `arrival` (the ordinals of the
   *  arrival order's keys, all longs: [[ArrivalOrder.longKeys]]) is given and they hold no
   *  NULL. The second value says whether they are in that order. Sorting the keys' arrays
   *  before any row exists makes a row per tuple once, in its place. */
  def unpack(packs: Iterator[Row], arrival: Array[Int]): (Array[InternalRow], Boolean) = {
    val read = packs.map(pack => PackFormat.read(layout, pack.getAs[Array[Byte]](pack.length - 1)))
      .toArray
    val n = read.iterator.map(_.count).sum
    val tuples = new Array[InternalRow](n)
    val keys = arrivalKeys(read, arrival, n)
    if (keys == null) {
      var at = 0
      read.foreach { columns =>
        var i = 0
        while (i < columns.count) { tuples(at) = new PackedRow(columns, i); at += 1; i += 1 }
      }
      return (tuples, false)
    }
    val order = LongKeySort.order(keys, n)
    // Tuple g of the batch is tuple g - start(p) of pack p = packOf(g).
    val packOf = new Array[Int](n)
    val start = new Array[Int](read.length)
    var at = 0
    read.indices.foreach { p =>
      start(p) = at
      java.util.Arrays.fill(packOf, at, at + read(p).count, p)
      at += read(p).count
    }
    var j = 0
    while (j < n) {
      val g = order(j)
      val p = packOf(g)
      tuples(j) = new PackedRow(read(p), g - start(p))
      j += 1
    }
    (tuples, true)
  }

  /** One partition's tuples packed (as a map task packs them) to be held in state between
   *  micro-batches: one value per partition, its columns' bytes, instead of a Row per tuple. */
  def hold(tuples: scala.collection.IndexedSeq[InternalRow]): Array[Byte] = {
    val writer = new PackFormat.Writer(layout, keyOf(tuples.head).copy(), restOf)
    tuples.foreach(writer.add)
    writer.result()
  }

  /** Tuples held by `hold`, in their order. */
  def unhold(bytes: Array[Byte]): IndexedSeq[InternalRow] = {
    val columns = PackFormat.read(layout, bytes)
    IndexedSeq.tabulate(columns.count)(i => new PackedRow(columns, i))
  }

  @transient private lazy val attributes = DataTypeUtils.toAttributes(input)
  @transient private lazy val keyOf =
    UnsafeProjection.create(layout.keys.map(attributes(_)).toSeq, attributes)
  @transient private lazy val restOf =
    UnsafeProjection.create(layout.rest.map(attributes(_)).toSeq, attributes)

  /** The arrival keys of every tuple, pack after pack, or null when they cannot be sorted as
   *  longs (no such keys, or a NULL among them). */
  private def arrivalKeys(read: Array[PackFormat.Columns], arrival: Array[Int], n: Int)
      : Array[Array[Long]] = {
    if (arrival.isEmpty || read.exists(c => arrival.exists(k => c.longs(k) == null ||
      c.nulls(k) != null))) return null
    arrival.map { k =>
      val all = new Array[Long](n)
      var at = 0
      read.foreach { c => System.arraycopy(c.longs(k), 0, all, at, c.count); at += c.count }
      all
    }
  }
}
