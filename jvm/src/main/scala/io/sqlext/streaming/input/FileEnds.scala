package io.sqlext.streaming.input

import io.sqlext.window.WindowSpec
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType

/**
 * PUNCT(): the end of each input file punctuates. Spark reads a file whole within one
 * micro-batch, so over a micro-batch's tuples in arrival order a file ends where the next
 * begins, and the last one at the end of the micro-batch. One per micro-batch; a no-op for
 * windows without PUNCT().
 */
final class FileEnds(input: StructType) {
  private val fileIndex = input.fieldNames.indexOf(WindowSpec.FileColumn)
  /** The rank of the file being read (sql_ext_arrival_file(): -1 and up), before any. */
  private var file = FileEnds.NoFile

  /** Before `row` goes in: whether a file ended just before it. */
  def endsBefore(row: InternalRow): Boolean = fileIndex >= 0 && {
    val previous = file
    file = row.getLong(fileIndex)
    previous != FileEnds.NoFile && file != previous
  }

  /** After the micro-batch's last tuple: whether a file was open (it ends now). */
  def endsAtLast: Boolean = file != FileEnds.NoFile
}

object FileEnds {
  private val NoFile = Long.MinValue
}
