package io.sqlext.expressions

import org.apache.spark.TaskContext
import org.apache.spark.internal.Logging

/**
 * A task's count of the rows an expression leaves out of a generated plan, logged once when the
 * task ends, so they are never silently lost. One per expression instance (each task
 * deserializes its own); `message` words the count.
 */
private[expressions] final class TaskRejections(message: Long => String) extends Logging {
  private var rejected = 0L

  def add(): Unit = {
    if (rejected == 0L) {
      Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
        logWarning(message(rejected))
      })
    }
    rejected += 1
  }
}
