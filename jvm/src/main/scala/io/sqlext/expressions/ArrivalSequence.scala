package io.sqlext.expressions

import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry.FunctionBuilder
import org.apache.spark.sql.catalyst.expressions.{ExpressionInfo, LeafExpression, Nondeterministic}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, LongType}

/**
 * `sql_ext_arrival()`: the scan order of a row within its micro-batch, numbered as
 * monotonically_increasing_id numbers rows (partition index in the upper bits). Spark refuses
 * monotonically_increasing_id on streams; a streaming window needs exactly that order to
 * replay each micro-batch's tuples as they arrived.
 */
case class ArrivalSequence() extends LeafExpression with Nondeterministic with CodegenFallback {
  @transient private[this] var count: Long = _
  @transient private[this] var partitionMask: Long = _

  override protected def initializeInternal(partitionIndex: Int): Unit = {
    count = 0L
    partitionMask = partitionIndex.toLong << 33
  }

  override protected def evalInternal(input: InternalRow): Any = {
    val value = partitionMask + count
    count += 1
    value
  }

  override def nullable: Boolean = false
  override def dataType: DataType = LongType
  override def prettyName: String = ArrivalSequence.Name
}

object ArrivalSequence {
  val Name = "sql_ext_arrival"

  val registration: (FunctionIdentifier, ExpressionInfo, FunctionBuilder) = (
    FunctionIdentifier(Name),
    new ExpressionInfo(classOf[ArrivalSequence].getName, Name),
    _ => ArrivalSequence())
}
