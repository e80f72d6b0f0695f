package io.sqlext.expressions

import org.apache.spark.TaskContext
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Predicate, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.util.LongAccumulator

/**
 * `child` (a condition) as a filter's predicate, counting the rows it rejects in `counter` (a
 * stream's, read by SHOW STREAMS) and logging each task's count: rows a generated plan leaves
 * out are never silently lost.
 */
case class CountedTrue(child: Expression, counter: Option[LongAccumulator], what: String)
    extends UnaryExpression with Predicate with CodegenFallback with Logging {

  override def nullable: Boolean = false

  // Not to be moved: as a deterministic condition over a projection the optimizer would push it
  // below that projection, substituting the projected expressions into it, so a condition over
  // a decoded value (from_json) would decode every row twice, once here, interpreted.
  override lazy val deterministic: Boolean = false

  @transient private var rejected = 0L

  override def eval(input: InternalRow): Any = {
    if (child.eval(input) == true) return true
    if (rejected == 0L) {
      Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
        logWarning(s"sql_ext: $rejected $what")
      })
    }
    rejected += 1
    counter.foreach(_.add(1))
    false
  }

  override protected def withNewChildInternal(newChild: Expression): CountedTrue =
    copy(child = newChild)
}
