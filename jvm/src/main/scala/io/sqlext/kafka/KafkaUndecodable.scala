package io.sqlext.kafka

import io.sqlext.SqlExtErrors
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo, Literal}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.StringType

/**
 * `SELECT * FROM kafka_undecodable('<Kafka topic table>')`: the messages of the topic whose
 * value does not decode into the table's columns, with the raw value (`kafka_value`) and the
 * message's key, partition, offset and timestamp. They are in the topic for as long as Kafka
 * keeps them; this is where they are read (and copied to a table, if they are to outlive it).
 */
object KafkaUndecodable {
  val Name = "kafka_undecodable"

  private val info = new ExpressionInfo(getClass.getCanonicalName, null, Name,
    "_FUNC_('<Kafka topic table>') - the table's messages whose value does not decode.",
    "", "", "", "table_funcs", "", "", "")

  private def builder(args: Seq[Expression]): LogicalPlan = args match {
    case Seq(Literal(name, StringType)) if name != null =>
      read(SparkSession.active, name.toString)
    case _ => throw SqlExtErrors.analysis("SQL_EXT_WRONG_TABLE_KIND",
      s"$Name takes the name of a Kafka topic table as a string: $Name('<table>')")
  }

  val registration = (FunctionIdentifier(Name), info, builder _)

  private def read(session: SparkSession, name: String): LogicalPlan = {
    val ident = session.sessionState.sqlParser.parseTableIdentifier(name)
    val table = session.sessionState.catalog.getTableMetadata(ident)
    if (!table.provider.contains(KafkaTopic.Provider)) throw SqlExtErrors.analysis(
      "SQL_EXT_WRONG_TABLE_KIND",
      s"$Name('$name'): ${table.identifier.unquotedString} is not a Kafka topic table " +
        "(CREATE TABLE t (<columns>) USING kafka OPTIONS (...))")
    val messages = KafkaMessages(table.schema, table.storage.properties)
    val kafka = KafkaMessages.sparkKafka(session).createRelation(session.sqlContext,
      messages.batchOptions)
    messages.undecodable(session.baseRelationToDataFrame(kafka)).queryExecution.analyzed
  }
}
