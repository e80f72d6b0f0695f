package io.sqlext.optimizer

import io.sqlext.Contract
import io.sqlext.expressions.CountedNotNull
import io.sqlext.plans.logical.WindowAssign
import io.sqlext.window.{PaneSpec, WindowSpec}
import org.apache.spark.SparkContext
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.{Expand, Filter, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.metric.SQLMetrics
import org.apache.spark.sql.types._

/**
 * A TIME_INTERVAL window without a watermark (all input present) is a pure row-to-panes
 * expansion. Written as Spark's own hopping-window shape, Filter(Expand) with one projection
 * per pane a tuple can belong to, it runs fully code-generated, in place:
 *
 *   Filter(event IS NOT NULL, counted) -> Expand(ceil(D/P) copies, pane N_i = floor((t-O)/P) - i)
 *   -> Filter(start_i + D > t) -> Project(input ++ firing columns)
 *
 * Pane numbers use exact integer arithmetic on microseconds: [[PaneSpec]]'s membership, as
 * expressions (ExpandPanesSuite checks the two agree). TIMESTAMP_NTZ event times keep the
 * operator's own expansion.
 */
case class ExpandPanes(sparkContext: SparkContext) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case w: WindowAssign if w.spec.isPaneExpansion && eventTime(w).exists(e => supported(e)) =>
      expand(w, eventTime(w).get)
  }

  private def eventTime(w: WindowAssign): Option[Attribute] =
    w.child.output.find(_.name == WindowSpec.EventTimeColumn)

  private def supported(e: Attribute): Boolean = e.dataType match {
    case TimestampType | _: NumericType => true
    case _ => false
  }

  private def eventMicros(e: Attribute): Expression = e.dataType match {
    case TimestampType => UnixMicros(e)
    case ByteType | ShortType | IntegerType | LongType =>
      Multiply(Cast(e, LongType), Literal(1000000L))
    case _ => Cast(Round(Multiply(Cast(e, DoubleType), Literal(1e6)), Literal(0)), LongType)
  }

  private def bound(micros: Expression, dataType: DataType): Expression = dataType match {
    case TimestampType => MicrosToTimestamp(micros)
    case LongType => IntegralDivide(micros, Literal(1000000L))
    case _ => Divide(Cast(micros, DoubleType), Literal(1e6))
  }

  private def expand(w: WindowAssign, event: Attribute): LogicalPlan = {
    val spec = w.spec
    val panes = PaneSpec.of(spec)
    val (period, duration, offset) = (panes.period, panes.duration, panes.offset)
    val counted = Filter(CountedNotNull(event, SQLMetrics.createMetric(sparkContext,
      "rows not windowed (NULL event time)"), s"the event time of ${spec.policyText}"), w.child)
    val time = eventMicros(event)
    val shifted = Subtract(time, Literal(offset))
    // PaneSpec.lastPane: floor((t - O) / P), exact on longs.
    val lastPane = IntegralDivide(Subtract(shifted, Pmod(shifted, Literal(period))),
      Literal(period))
    val start = AttributeReference("__sx_pane_start_us", LongType, nullable = false)()
    val copies = panes.copies
    val projections = (0 until copies).map { i =>
      val n = Subtract(lastPane, Literal(i.toLong))
      val startMicros = Add(Multiply(n, Literal(period)), Literal(offset))
      val meta = w.metaOutput.map(_.name).map {
        case WindowSpec.FireColumn | Contract.WindowIdColumn => n
        case Contract.PaneStartColumn => bound(startMicros, w.metaOutput.find(_.name == Contract.PaneStartColumn)
          .get.dataType)
        case Contract.PaneEndColumn => bound(Add(startMicros, Literal(duration)),
          w.metaOutput.find(_.name == Contract.PaneEndColumn).get.dataType)
        case Contract.PaneTimingColumn => Literal(w.spec.expansionFiring.timing)
        case Contract.PaneIndexColumn => Literal(0L)
        case Contract.WindowEventColumn => Literal(w.spec.expansionFiring.event)
      }
      w.child.output ++ meta :+ startMicros
    }
    val expanded = Expand(projections, w.child.output ++ w.metaOutput :+ start, counted)
    val contains = Filter(GreaterThan(Add(start, Literal(duration)), time), expanded)
    Project(w.child.output ++ w.metaOutput, contains)
  }
}
