package io.sqlext.expressions

import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry.FunctionBuilder
import org.apache.spark.sql.catalyst.expressions.{ExpressionInfo, InputFileBlockStart, InputFileName, LeafExpression, Nondeterministic}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, FalseLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.types.{DataType, LongType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * `sql_ext_arrival()`: a row's place in its source's order, one long, the same for a batch scan
 * and for a micro-batch (spec/sql.md section 2), so a stream is replayed as the batch query
 * replays it. `sql_ext_arrival_file()`: the rank of the row's file in that order (PUNCT()).
 *
 * A file source's order is its files by modification time, then path (Delta admits a table's
 * files in commit order and records each file's modification time; a file directory stream
 * admits files by modification time), then each file's splits by offset, then the rows of a
 * split. Spark packs a scan's files into tasks largest first, so no task sees this order: the
 * planning rule [[io.sqlext.replay.RankArrival]] ranks the scan's splits on the driver
 * ([[SplitRanks]]) and the value is `split rank << RowBits | row`.
 *
 * Rows from no file (a DataFrame, a rate stream) come first, by task and position in the task:
 * the scan order of such sources.
 */
case class ArrivalSequence(fileOnly: Boolean, ranks: SplitRanks = SplitRanks.Unplanned)
    extends LeafExpression with Nondeterministic {
  @transient private[this] var counter: ArrivalCounter = _

  override protected def initializeInternal(partitionIndex: Int): Unit = {
    counter = new ArrivalCounter(ranks, fileOnly)
    counter.initialize(partitionIndex)
  }

  override protected def evalInternal(input: InternalRow): Any = counter.next()

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val counterClass = classOf[ArrivalCounter].getName
    val ranksRef = ctx.addReferenceObj("arrivalRanks", ranks, classOf[SplitRanks].getName)
    val state = ctx.addMutableState(counterClass, "arrival",
      v => s"$v = new $counterClass($ranksRef, $fileOnly);", forceInline = true)
    ctx.addPartitionInitializationStatement(s"$state.initialize(partitionIndex);")
    ev.copy(code = code"final long ${ev.value} = $state.next();", isNull = FalseLiteral)
  }

  override def nullable: Boolean = false
  override def dataType: DataType = LongType
  override def prettyName: String =
    if (fileOnly) ArrivalSequence.FileName else ArrivalSequence.Name
  // The ranks can be long: plans print the function, not them.
  override def toString: String = s"$prettyName()"
  override def sql: String = s"$prettyName()"
}

object ArrivalSequence {
  val Name = "sql_ext_arrival"
  val FileName = "sql_ext_arrival_file"
  /** Rows per split: 2^36. Splits per scan: 2^27 (the sign bit marks rows from no file). */
  val RowBits = 36
  val MaxSplits: Long = 1L << 27

  val registrations: Seq[(FunctionIdentifier, ExpressionInfo, FunctionBuilder)] =
    Seq(Name -> false, FileName -> true).map { case (name, fileOnly) =>
      (FunctionIdentifier(name), new ExpressionInfo(classOf[ArrivalSequence].getName, name),
        (_: Seq[_]) => ArrivalSequence(fileOnly))
    }
}

/** The per-task state of [[ArrivalSequence]]: the split being scanned and the row in it. Public
 *  for the generated code. */
final class ArrivalCounter(ranks: SplitRanks, fileOnly: Boolean) {
  // Spark's own input_file_name() and input_file_block_start(): the split being scanned.
  private[this] val currentFile = InputFileName()
  private[this] val currentStart = InputFileBlockStart()
  private[this] var partition = 0L
  private[this] var path: UTF8String = _
  private[this] var start = 0L
  private[this] var base = 0L
  private[this] var row = 0L

  def initialize(partitionIndex: Int): Unit = {
    currentFile.initialize(partitionIndex)
    currentStart.initialize(partitionIndex)
    partition = partitionIndex.toLong
    path = null
  }

  def next(): Long = {
    val file = currentFile.eval(null).asInstanceOf[UTF8String]
    // The holder makes a new path object for each split it starts: the same object is the same
    // split, so its offset (a second thread-local lookup) is read only when the split changes,
    // and no path's bytes are compared per row.
    if (path == null || (file ne path)) {
      path = file
      start = currentStart.eval(null).asInstanceOf[Long]
      row = 0L
      base = if (file.numBytes() == 0) {
        if (fileOnly) -1L else Long.MinValue + (partition << ArrivalSequence.RowBits)
      } else {
        val url = file.toString
        if (fileOnly) ranks.file(url) else ranks.split(url, start) << ArrivalSequence.RowBits
      }
    }
    if (fileOnly) return base
    if (row >> ArrivalSequence.RowBits != 0) {
      throw new IllegalStateException(s"sql_ext_arrival(): more than 2^${ArrivalSequence.RowBits}" +
        s" rows in one split of $path")
    }
    val value = base | row
    row += 1
    value
  }
}
