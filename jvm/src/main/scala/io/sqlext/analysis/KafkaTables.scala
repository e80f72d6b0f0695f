package io.sqlext.analysis

import java.util.Locale

import io.sqlext.kafka.KafkaTopic
import org.apache.spark.sql.catalyst.plans.logical.{CreateTable, LogicalPlan, TableSpec,
  UnresolvedTableSpec}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.{CreateTable => CreateTableV1}

/**
 * `CREATE TABLE t (<columns>) USING kafka OPTIONS (...)`: a Kafka topic as a table of those
 * columns (spec/sql.md section 9), given the data source that decodes the messages
 * (io.sqlext.kafka.KafkaTopic). Spark itself rejects this statement (its Kafka source has a
 * fixed schema), so no statement Spark runs changes meaning; without columns, `USING kafka`
 * stays Spark's own table of raw messages.
 */
object KafkaTables extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperators {
    case create @ CreateTable(_, columns, _, spec, _) if columns.nonEmpty && isKafka(spec.provider) =>
      create.copy(tableSpec = spec match {
        case s: TableSpec => s.copy(provider = Some(KafkaTopic.Provider))
        case s: UnresolvedTableSpec => s.copy(provider = Some(KafkaTopic.Provider))
        case other => other
      })
    // The session catalog's form: Spark keeps kafka among its V1 sources, so its own rule
    // (ResolveSessionCatalog) may have turned the statement into this one first.
    case create @ CreateTableV1(table, _, None) if table.schema.nonEmpty && isKafka(table.provider) =>
      create.copy(tableDesc = table.copy(provider = Some(KafkaTopic.Provider)))
  }

  private def isKafka(provider: Option[String]): Boolean =
    provider.exists(_.toLowerCase(Locale.ROOT) == "kafka")
}
