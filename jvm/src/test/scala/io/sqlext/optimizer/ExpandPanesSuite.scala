package io.sqlext.optimizer

import io.sqlext.plans.logical.WindowAssign
import io.sqlext.window.{PaneSpec, WindowSpec}
import org.apache.spark.SparkContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.types._
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

/** The rule alone, over hand-built plans: where it turns a TIME_INTERVAL window without a
 *  watermark into Filter(Expand), that its pane numbers are [[PaneSpec.panesOf]]'s, and where
 *  it must leave the window operator in place. */
class ExpandPanesSuite extends AnyFunSuite with BeforeAndAfterAll {
  private var sc: SparkContext = _ // the rule's row counter is a SQL metric

  override def beforeAll(): Unit = sc = new SparkContext("local[1]", "ExpandPanesSuite")
  override def afterAll(): Unit = sc.stop()

  private def spec(duration: Double, period: Double, offset: Double, watermark: String = "") =
    WindowSpec.fromJson(s"""{"kind":"time_interval","policy":"","policy_text":"TI",
      |"partition_columns":[],"ordered":false,"meta":["window_id"],"duration":$duration,
      |"period":$period,"discard":0,"offset":$offset,"watermark":"$watermark",
      |"watermark_delay":0}""".stripMargin)

  private def plan(s: WindowSpec, eventType: DataType): (WindowAssign, Attribute) = {
    val event = AttributeReference(WindowSpec.EventTimeColumn, eventType)()
    (WindowAssign.create(s, LocalRelation(Seq(event))), event)
  }

  /** Pane numbers the rewritten plan gives one event time, evaluated row by row. */
  private def panesOf(rewritten: LogicalPlan, event: Attribute, value: Any): Seq[Long] = {
    val Project(_, Filter(contains, Expand(projections, output, _))) = rewritten
    val row = InternalRow(value)
    val fire = output.indexWhere(_.name == WindowSpec.FireColumn)
    projections.flatMap { projection =>
      val copy = InternalRow.fromSeq(projection.map(e =>
        BindReferences.bindReference(e, Seq(event)).eval(row)))
      val keep = BindReferences.bindReference(contains, output).eval(copy)
      Option.when(keep == true)(copy.getLong(fire))
    }.sorted
  }

  test("pane numbers are PaneSpec's for timestamps, integers and fractional seconds") {
    val random = new Random(3)
    Seq((10.0, 5.0, 0.0), (4.0, 7.0, 1.0), (3.0, 1.0, 0.5), (0.25, 0.1, 0.05)).foreach {
      case (d, p, o) =>
        val s = spec(d, p, o)
        val panes = PaneSpec.of(s)
        (0 until 200).foreach { _ =>
          val seconds = random.nextInt(2000) - 1000
          val micros = seconds * 1000000L + random.nextInt(1000000)
          Seq[(DataType, Any, Long)](
            (TimestampType, micros, micros),
            (LongType, seconds.toLong, seconds * 1000000L),
            (DoubleType, micros / 1e6, micros)).foreach { case (dataType, value, t) =>
            val (w, event) = plan(s, dataType)
            val got = panesOf(ExpandPanes(sc)(w), event, value)
            assert(got == panes.panesOf(t).toSeq, s"$s $dataType $value")
          }
        }
    }
  }

  test("should not apply: a watermark, a TIMESTAMP_NTZ event time, a TUMBLING window") {
    def applies(p: LogicalPlan) = ExpandPanes(sc)(p).collectFirst { case e: Expand => e }
      .isDefined
    assert(applies(plan(spec(10, 5, 0), TimestampType)._1))
    assert(!applies(plan(spec(10, 5, 0, watermark = "by"), TimestampType)._1))
    assert(!applies(plan(spec(10, 5, 0), TimestampNTZType)._1))
    val tumbling = WindowSpec.fromJson("""{"kind":"tumbling","policy":"count","count":3,
      |"policy_text":"COUNT(3)","partition_columns":[],"ordered":false,"meta":[]}"""
      .stripMargin)
    assert(!applies(WindowAssign.create(tumbling, LocalRelation(Seq(
      AttributeReference("x", LongType)())))))
  }
}
