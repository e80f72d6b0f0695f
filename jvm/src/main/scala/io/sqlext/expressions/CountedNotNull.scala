package io.sqlext.expressions

import org.apache.spark.TaskContext
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Predicate, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.execution.metric.SQLMetric

/**
 * `child IS NOT NULL`, counting the rows it rejects in `metric` and logging each task's count:
 * rows that cannot be windowed are filtered out of a generated plan but never silently lost.
 */
case class CountedNotNull(child: Expression, metric: SQLMetric, what: String)
    extends UnaryExpression with Predicate with CodegenFallback with Logging {

  override def nullable: Boolean = false

  @transient private var rejected = 0L

  override def eval(input: InternalRow): Any = {
    if (child.eval(input) != null) return true
    if (rejected == 0L) {
      Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
        logWarning(s"sql_ext: $rejected rows were not windowed: $what is NULL")
      })
    }
    rejected += 1
    metric.add(1)
    false
  }

  override protected def withNewChildInternal(newChild: Expression): CountedNotNull =
    copy(child = newChild)
}
