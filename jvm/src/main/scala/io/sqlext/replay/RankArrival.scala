package io.sqlext.replay

import io.sqlext.expressions.{ArrivalSequence, SplitRanks}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.datasources.FilePartition
import org.apache.spark.sql.execution.exchange.Exchange

/**
 * Gives each `sql_ext_arrival()` the split ranks ([[SplitRanks]]) of the file scans it reads
 * from within its task (not across an exchange), so rows carry their source order, not the
 * order in which Spark packed the files into tasks. A physical rule: only the planned scan
 * knows its splits. It runs for batch queries (in each adaptive stage) and micro-batches alike.
 */
object RankArrival extends Rule[SparkPlan] {

  /** Installed as a columnar rule, the extension point that runs on every physical plan. */
  object AsColumnarRule extends ColumnarRule {
    override def preColumnarTransitions: Rule[SparkPlan] = RankArrival
  }

  override def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
    case node if node.expressions.exists(_.exists(unranked)) =>
      lazy val ranks = SplitRanks.of(node.children.flatMap(scansWithin).flatMap { scan =>
        scan.inputRDD.partitions.toSeq.collect { case p: FilePartition => p.files.toSeq }.flatten
      })
      node.transformExpressions {
        case a: ArrivalSequence if unranked(a) => a.copy(ranks = ranks)
      }
  }

  private def unranked(e: org.apache.spark.sql.catalyst.expressions.Expression): Boolean =
    e match {
      case a: ArrivalSequence => a.ranks eq SplitRanks.Unplanned
      case _ => false
    }

  /** File scans that run in the same task as their parent: not behind an exchange. */
  private def scansWithin(plan: SparkPlan): Seq[FileSourceScanExec] = plan match {
    case scan: FileSourceScanExec => Seq(scan)
    case _: Exchange | _: QueryStageExec => Nil
    case other => other.children.flatMap(scansWithin)
  }
}
