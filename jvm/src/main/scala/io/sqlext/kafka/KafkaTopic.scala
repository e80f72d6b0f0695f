package io.sqlext.kafka

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{Row, SQLContext}
import org.apache.spark.sql.execution.streaming.Source
import org.apache.spark.sql.sources.{BaseRelation, SchemaRelationProvider, StreamSourceProvider,
  TableScan}
import org.apache.spark.sql.types.StructType

/**
 * A Kafka topic as a table with typed columns (spec/sql.md section 9): the data source that
 * `CREATE TABLE t (<columns>) USING kafka OPTIONS (...)` is given ([[KafkaTables]]). Reading,
 * offsets, starting positions, topic patterns and exactly-once replay are Spark's own Kafka
 * source, to which every option except ours is handed; this source only decodes each message's
 * value into the declared columns ([[KafkaMessages]]).
 *
 *  - batch (`SELECT ... FROM t`): every message now in the topic, as Spark's Kafka relation
 *    reads it (earliest to latest unless the options say otherwise);
 *  - stream (`STREAM(t)`): Spark's Kafka micro-batch source, decoded batch by batch
 *    ([[DecodedKafkaSource]]).
 */
class KafkaTopic extends SchemaRelationProvider with StreamSourceProvider {

  override def createRelation(sqlContext: SQLContext, parameters: Map[String, String],
      schema: StructType): BaseRelation = {
    val messages = KafkaMessages(schema, parameters)
    val kafka = KafkaMessages.sparkKafka(sqlContext.sparkSession).createRelation(sqlContext,
      messages.batchOptions)
    new KafkaTopicRelation(sqlContext, messages, kafka)
  }

  override def sourceSchema(sqlContext: SQLContext, schema: Option[StructType],
      providerName: String, parameters: Map[String, String]): (String, StructType) = {
    val messages = KafkaMessages(declared(schema), parameters)
    (messages.describe, messages.schema)
  }

  override def createSource(sqlContext: SQLContext, metadataPath: String,
      schema: Option[StructType], providerName: String, parameters: Map[String, String])
      : Source = {
    val messages = KafkaMessages(declared(schema), parameters)
    val kafka = KafkaMessages.sparkKafka(sqlContext.sparkSession).createSource(sqlContext,
      metadataPath, None, KafkaMessages.KafkaProvider, messages.streamOptions)
    DecodedKafkaSource(sqlContext.sparkSession, kafka, messages, metadataPath)
  }

  private def declared(schema: Option[StructType]): StructType = schema.getOrElse(
    throw new IllegalArgumentException(s"${KafkaTopic.Name} needs the table's columns: " +
      "CREATE TABLE t (<columns>) USING kafka OPTIONS (...)"))
}

object KafkaTopic {
  val Name = "sql_ext kafka topic"
  /** The provider the catalog keeps for a Kafka topic table (a class name, so that SHOW CREATE
   *  TABLE runs again as it is). */
  val Provider: String = classOf[KafkaTopic].getName
}

/** A batch read of the topic: Spark's Kafka relation, decoded. */
final class KafkaTopicRelation(override val sqlContext: SQLContext, messages: KafkaMessages,
    kafka: BaseRelation) extends BaseRelation with TableScan {

  override def schema: StructType = messages.schema

  // The decoded plan's own rows (InternalRow), as Spark's file and Kafka relations hand them.
  override def needConversion: Boolean = false

  override def buildScan(): RDD[Row] = {
    val raw = sqlContext.sparkSession.baseRelationToDataFrame(kafka)
    messages.decode(raw, None).queryExecution.toRdd.asInstanceOf[RDD[Row]]
  }
}
