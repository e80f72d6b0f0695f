package io.sqlext.streaming

import io.sqlext.execution.PackTuplesExec
import io.sqlext.plans.logical.PackTuples
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.sqlext.CatalystFrames
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * A TUMBLING or SLIDING micro-batch's tuples packed before the shuffle: each map task hands on,
 * per partition key, one row holding the key and its tuples as Spark's binary rows
 * ([[PackTuples]]), not one row per tuple. The shuffle, Spark's sort by key ahead of the state
 * operator and the decoding cost per key and task instead of per tuple, and the processor reads
 * the tuples where they lie: no conversion of a value to a Row (those were most of a backlog's
 * stateful stage). The tuples' own columns (arrival rank, ORDER BY value, file) put them in
 * arrival order there ([[MicroBatchOrder]]), so the packing order never matters.
 */
final class PackedTuples(input: StructType, keyColumns: Seq[String]) extends Serializable {
  private val fields = input.length

  /** The key columns as they are, then the key's tuples (all of `input`'s columns). */
  def pack(tuples: DataFrame): DataFrame = CatalystFrames.of(tuples.sparkSession,
    PackTuples(keyColumns, tuples.queryExecution.analyzed))

  /** The tuples of packed rows: UnsafeRows of `input` over the packs' bytes (no copy). */
  def unpack(packs: Iterator[Row]): Iterator[UnsafeRow] = packs.flatMap { pack =>
    val bytes = pack.getAs[Array[Byte]](pack.length - 1)
    new Iterator[UnsafeRow] {
      private var at = 0
      override def hasNext: Boolean = at < bytes.length
      override def next(): UnsafeRow = {
        val size = Platform.getLong(bytes, Platform.BYTE_ARRAY_OFFSET + at).toInt
        val row = new UnsafeRow(fields)
        row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + at + PackTuplesExec.LengthBytes, size)
        at += PackTuplesExec.LengthBytes + size
        row
      }
    }
  }
}
