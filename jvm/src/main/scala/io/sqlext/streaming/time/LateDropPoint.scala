package io.sqlext.streaming.time

import io.sqlext.window.{PaneRule, PaneSpec}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{LeafExpression, Nondeterministic}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, LongType}
import org.apache.spark.util.SerializableConfiguration

/**
 * The running micro-batch's drop point (µs): tuples with an event time below it are late
 * ([[PaneRule.dropPoint]] under the batch's SPL watermark, [[BatchWatermark]]). An expression,
 * so a query can test lateness before its rows leave Spark's own format: LATE ROWS INTO builds
 * a late row's columns only for the tuples that are late. Read once per task; non-deterministic
 * for Catalyst (it changes from batch to batch), so nothing moves it about.
 */
case class LateDropPoint(panes: PaneSpec, checkpoint: String,
    hadoopConf: Broadcast[SerializableConfiguration])
    extends LeafExpression with Nondeterministic with CodegenFallback {

  override def dataType: DataType = LongType
  override def nullable: Boolean = false

  @transient private var point = Long.MinValue

  override protected def initializeInternal(partitionIndex: Int): Unit = {
    point = PaneRule(panes).dropPoint(SplWatermark(panes).ofBatch(checkpoint,
      hadoopConf.value.value))
  }

  override protected def evalInternal(input: InternalRow): Any = point
}
