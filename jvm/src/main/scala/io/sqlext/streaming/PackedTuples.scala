package io.sqlext.streaming

import io.sqlext.plans.logical.PackTuples
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.GenericRow
import org.apache.spark.sql.sqlext.CatalystFrames
import org.apache.spark.sql.types.StructType

/**
 * A TUMBLING or SLIDING micro-batch's tuples packed before the shuffle: each map task hands on,
 * per partition key, one row holding the key and its tuples' other columns as arrays, not one
 * row per tuple ([[PackTuples]], in Spark's internal form). The shuffle, Spark's sort by key
 * ahead of the state operator and the decoding into Rows then cost per key and task instead of
 * per tuple (they were most of a backlog's stateful stage). The processor unpacks; the tuples'
 * own columns (arrival rank, ORDER BY value, file) put them in arrival order there
 * ([[MicroBatchOrder]]), as before, so the packing order never matters.
 */
final class PackedTuples(input: StructType, keyColumns: Seq[String]) extends Serializable {
  private val keyIndexes = keyColumns.map(input.fieldIndex).toArray
  private val valueIndexes = PackTuples.packedIndexes(input.fieldNames, keyColumns).toArray
  require(valueIndexes.nonEmpty, "sql_ext: a window's tuples carry their arrival rank")

  /** The key columns as they are, then each other column as an array of its values. */
  def pack(tuples: DataFrame): DataFrame = CatalystFrames.of(tuples.sparkSession,
    PackTuples(keyColumns, tuples.queryExecution.analyzed))

  /** The tuples of packed rows, as Rows of `input`. */
  def unpack(packs: Iterator[Row]): Iterator[Row] = packs.flatMap { pack =>
    val keys = keyIndexes.indices.map(pack.get).toArray
    val columns = valueIndexes.indices.map(j => pack.getSeq[Any](keys.length + j).iterator)
      .toArray
    val first = columns(0)
    new Iterator[Row] {
      override def hasNext: Boolean = first.hasNext
      override def next(): Row = {
        val values = new Array[Any](input.length)
        var k = 0
        while (k < keys.length) { values(keyIndexes(k)) = keys(k); k += 1 }
        var j = 0
        while (j < columns.length) { values(valueIndexes(j)) = columns(j).next(); j += 1 }
        new GenericRow(values)
      }
    }
  }
}
