package io.sqlext.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Predicate, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * `child IS NOT NULL`, counting the rows it rejects in `metric` and logging each task's count:
 * rows that cannot be windowed are filtered out of a generated plan but never silently lost.
 */
case class CountedNotNull(child: Expression, metric: SQLMetric, what: String)
    extends UnaryExpression with Predicate with CodegenFallback {

  override def nullable: Boolean = false

  @transient private lazy val rejections =
    new TaskRejections(n => s"sql_ext: $n rows were not windowed: $what is NULL")

  override def eval(input: InternalRow): Any = {
    if (child.eval(input) != null) return true
    rejections.add()
    metric.add(1)
    false
  }

  override protected def withNewChildInternal(newChild: Expression): CountedNotNull =
    copy(child = newChild)
}
