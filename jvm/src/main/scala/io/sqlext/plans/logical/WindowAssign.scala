package io.sqlext.plans.logical

import io.sqlext.SqlExtErrors
import io.sqlext.window.WindowSpec
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types._

/**
 * Assigns the tuples of `child` to window firings: every output row is an input tuple that took
 * part in one firing, tagged with the firing (`__sx_fire`) and the pane-function columns the
 * query reads. Aggregation over the firings is an ordinary Spark aggregate above this node.
 */
case class WindowAssign(
    spec: WindowSpec,
    inputs: Seq[Attribute],
    metaOutput: Seq[Attribute],
    child: LogicalPlan) extends UnaryNode {

  // `inputs` are the helper columns the operator reads; as expressions of the node they are its
  // references, so column pruning keeps them.

  override def output: Seq[Attribute] = child.output ++ metaOutput

  override def producedAttributes: AttributeSet = AttributeSet(metaOutput)

  override protected def withNewChildInternal(newChild: LogicalPlan): WindowAssign =
    copy(child = newChild)
}

object WindowAssign {

  /** Builds the node over a resolved child, checking the types the rewriter cannot see. */
  def create(spec: WindowSpec, child: LogicalPlan): WindowAssign = {
    def find(name: String) = child.output.find(_.name == name)
    val orderType = find(WindowSpec.OrderColumn).map(_.dataType).getOrElse(NullType)
    val eventType = find(WindowSpec.EventTimeColumn).map(_.dataType)
    eventType.foreach(checkEventTime(spec, _))
    checkTypes(spec, find(WindowSpec.DeltaColumn).map(_.dataType), orderType)
    checkTypes(spec, find(WindowSpec.TriggerDeltaColumn).map(_.dataType), orderType)
    val fire = AttributeReference(WindowSpec.FireColumn, LongType, nullable = false)()
    val meta = spec.meta.distinct.map { fn =>
      val dataType = fn match {
        case "pane_start" | "pane_end" => eventType.map(paneBoundType(spec, _)).getOrElse(orderType)
        case "pane_timing" | "window_event" => StringType
        case _ => LongType
      }
      AttributeReference(WindowSpec.MetaColumns(fn), dataType, nullable = true)()
    }
    // LATE ROWS INTO writes every source column: read, so column pruning keeps them.
    val inputs = if (spec.keepsLateRows) child.output
      else child.output.filter(a => a.name.startsWith("__sx_"))
    WindowAssign(spec, inputs, fire +: meta, child)
  }

  /** TIME_INTERVAL pane bounds take the ON expression's type; a number of seconds stays a
   *  BIGINT when every bound is a whole second. */
  def paneBoundType(spec: WindowSpec, eventType: DataType): DataType = eventType match {
    case TimestampType | TimestampNTZType => eventType
    case ByteType | ShortType | IntegerType | LongType
        if Seq(spec.duration, spec.period, spec.offset).forall(_.isWhole) =>
      LongType
    case _ => DoubleType
  }

  private def checkEventTime(spec: WindowSpec, eventType: DataType): Unit = eventType match {
    case _: NumericType | TimestampType | TimestampNTZType =>
    case other => throw SqlExtErrors.analysis("SQL_EXT_INVALID_WINDOW",
      s"${spec.policyText}: the ON expression is the " +
      s"event time, a timestamp or a number of seconds, but it is ${other.simpleString}")
  }

  private def checkTypes(spec: WindowSpec, deltaType: Option[DataType], orderType: DataType) = {
    deltaType.foreach {
      case _: NumericType | TimestampType | TimestampNTZType =>
      case other =>
        throw SqlExtErrors.analysis("SQL_EXT_INVALID_WINDOW",
          s"${spec.policyText}: the DELTA expression must be numeric " +
          s"or a timestamp, but it is ${other.simpleString}")
    }
    if (spec.usesClock) orderType match {
      case TimestampType | TimestampNTZType =>
      case other =>
        throw SqlExtErrors.analysis("SQL_EXT_INVALID_WINDOW",
          s"${spec.policyText}: batch TIME policies and PARTITION " +
          "EVICTION AGE replay time from the arrival order, so OVER (ORDER BY ...) must name " +
          "a timestamp" +
          (if (other == NullType) ", but there is no ORDER BY" else
            s", but it is ${other.simpleString}"))
    }
  }
}
