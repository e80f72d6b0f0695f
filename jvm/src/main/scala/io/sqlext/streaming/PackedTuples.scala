package io.sqlext.streaming

import io.sqlext.execution.PackFormat
import io.sqlext.plans.logical.PackTuples
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.InternalRow
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
   *  `input` over the packs' arrays. */
  def unpack(packs: Iterator[Row]): Array[InternalRow] = {
    val read = packs.map(pack => PackFormat.read(layout, pack.getAs[Array[Byte]](pack.length - 1)))
      .toArray
    val tuples = new Array[InternalRow](read.iterator.map(_.count).sum)
    var at = 0
    read.foreach { columns =>
      var i = 0
      while (i < columns.count) { tuples(at) = new PackedRow(columns, i); at += 1; i += 1 }
    }
    tuples
  }
}
