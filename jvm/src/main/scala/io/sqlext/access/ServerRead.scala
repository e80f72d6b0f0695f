package io.sqlext.access

import scala.util.DynamicVariable

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * A read the server makes for a user's statement, of files the user may not name: what
 * window_state('<table>') reads of the stream's checkpoint, once the table's own rule gave the
 * user SELECT on it. The access checks do not look inside (`PlanWalk`); no SQL and no Connect
 * message can make one. Gone before planning (`RemoveServerReads`).
 */
case class ServerRead(child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = child.output

  override protected def withNewChildInternal(newChild: LogicalPlan): ServerRead =
    copy(child = newChild)
}

object ServerRead {
  private val serving = new DynamicVariable(false)

  /** `plan()` analysed as the server's own work on this thread (the checks pass it), wrapped
   *  as a read of the server's. */
  def of(plan: => LogicalPlan): ServerRead = ServerRead(asServer(plan))

  /** `work()` as the server's own, on this thread: what it analyses passes the checks. For
   *  work on behalf of a statement the checks judged already. */
  private[access] def asServer[T](work: => T): T = serving.withValue(true)(work)

  /** Whether this thread is analysing the server's own work. */
  private[access] def inProgress: Boolean = serving.value
}

/** The optimizer's first step over a plan with a [[ServerRead]]: it is its child. */
object RemoveServerReads extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case ServerRead(child) => child
  }
}
