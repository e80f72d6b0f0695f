package io.sqlext.kafka

import io.sqlext.expressions.CountedDecoded
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.execution.datasources.DataSource
import org.apache.spark.sql.sources.{RelationProvider, StreamSourceProvider}
import org.apache.spark.sql.functions.{col, from_json}
import org.apache.spark.sql.sqlext.CatalystColumns
import org.apache.spark.sql.types._
import org.apache.spark.util.LongAccumulator

import java.util.Locale

/**
 * What a Kafka topic table's options and columns mean, and the decoding of its messages: the
 * declared columns from the value (JSON, by Spark's own `from_json`), then the message's key,
 * partition, offset and timestamp. One place for batch reads, streams and
 * `kafka_undecodable(...)`, so they cannot disagree on which message decodes.
 *
 * A message decodes when its value is a JSON object whose fields fit the declared types (a
 * field left out, or JSON null, is NULL). Any other message (not JSON, a field of the wrong
 * type, an empty value) is undecodable: it is not a row of the table, it is counted, and it
 * stays readable with its raw value through `kafka_undecodable('<table>')`.
 */
final case class KafkaMessages(declared: StructType, kafkaOptions: Map[String, String],
    jsonOptions: Map[String, String]) {
  import KafkaMessages._

  /** The table's columns: the declared ones, then the message's own. */
  def schema: StructType = StructType(declared.fields ++ MessageColumns.fields)

  def describe: String = s"${KafkaTopic.Name} " + kafkaOptions.collect {
    case (k, v) if Topics(k.toLowerCase(Locale.ROOT)) => s"$k=$v" }.mkString(", ")

  /** The options of Spark's Kafka relation for a batch read: every message the table's start
   *  admits ('latest' means "from when the stream starts": a batch read then reads them all). */
  def batchOptions: Map[String, String] = withStart(kafkaOptions).filter {
    case (k, v) => k.toLowerCase(Locale.ROOT) != StartingOffsets ||
      !StreamOnly(v.trim.toLowerCase(Locale.ROOT)) }

  /** The options of Spark's Kafka stream: no ending offsets (a stream has no end). */
  def streamOptions: Map[String, String] = withStart(kafkaOptions).filter {
    case (k, _) => !BatchOnly.contains(k.toLowerCase(Locale.ROOT)) }

  /** Spark's Kafka rows (key, value, topic, partition, offset, timestamp, timestampType) as
   *  the table's rows; undecodable messages left out and counted in `counter`. */
  def decode(raw: DataFrame, counter: Option[LongAccumulator]): DataFrame = {
    val counted = CatalystColumns.of(CountedDecoded(CatalystColumns.expression(parsed),
      parsedFields.fieldIndex(Corrupt), counter,
      "messages were not rows of the Kafka topic table: their value does not decode"))
    raw.select(col("*"), counted.as(Parsed)).where(col(Parsed).isNotNull)
      .select(declared.fieldNames.toSeq.map(f => col(s"$Parsed.`$f`")) ++ messageColumns: _*)
  }

  /** The messages that do not decode, with their raw value. */
  def undecodable(raw: DataFrame): DataFrame = parse(raw).where(!isDecoded)
    .select(col("value").cast(StringType).as("kafka_value") +: messageColumns: _*)

  /** The value parsed into the declared fields and the corrupt-record field. A message
   *  decodes when its value is non-null and parses (a NULL value parses to NULL). */
  private def parsed: Column = from_json(col("value").cast(StringType), parsedFields,
    jsonOptions + ("columnNameOfCorruptRecord" -> Corrupt) + ("mode" -> "PERMISSIVE"))

  private def parsedFields: StructType = StructType(declared.fields :+ StructField(Corrupt,
    StringType))

  private def parse(raw: DataFrame): DataFrame = raw.select(col("*"), parsed.as(Parsed))

  private def isDecoded: Column = col(Parsed).isNotNull && col(s"$Parsed.$Corrupt").isNull

  private def messageColumns: Seq[Column] = Seq(
    col("key").cast(StringType).as("kafka_key"),
    col("partition").as("kafka_partition"),
    col("offset").as("kafka_offset"),
    col("timestamp").as("kafka_timestamp"))
}

object KafkaMessages {
  val KafkaProvider = "kafka"

  /** Spark's Kafka source (its class is private to Spark's package: found by its name, as
   *  `format("kafka")` finds it). */
  def sparkKafka(session: SparkSession): RelationProvider with StreamSourceProvider =
    DataSource.lookupDataSource(KafkaProvider, session.sessionState.conf)
      .getConstructor().newInstance().asInstanceOf[RelationProvider with StreamSourceProvider]
  /** The message's own columns, after the declared ones (spec/sql.md section 9). */
  val MessageColumns: StructType = StructType(Seq(
    StructField("kafka_key", StringType), StructField("kafka_partition", IntegerType),
    StructField("kafka_offset", LongType), StructField("kafka_timestamp", TimestampType)))
  val Formats = Seq("json")
  private val FormatOption = "format"
  private val Topics = Set("subscribe", "subscribepattern", "assign")
  private val JsonPrefix = "json."
  private val Parsed = "__sx_message"
  private val Corrupt = "__sx_undecodable"

  /** A table's meaning from its columns (as declared, or as the catalog keeps them: with the
   *  message columns at the end) and options. Errors name the problem. */
  def apply(schema: StructType, options: Map[String, String]): KafkaMessages = {
    val lower = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    val format = lower.getOrElse(FormatOption, "json").toLowerCase(Locale.ROOT)
    if (!Formats.contains(format)) throw new IllegalArgumentException(s"Kafka topic table: " +
      s"'format' = '$format' is not supported; messages decode from ${Formats.mkString(", ")}")
    val declared = declaredColumns(schema)
    if (declared.isEmpty) throw new IllegalArgumentException("Kafka topic table: it needs " +
      "columns to decode the messages into: CREATE TABLE t (<columns>) USING kafka ...")
    val json = options.collect { case (k, v) if k.toLowerCase(Locale.ROOT).startsWith(JsonPrefix)
      => k.substring(JsonPrefix.length) -> v }
    val kafka = options.filter { case (k, _) =>
      val key = k.toLowerCase(Locale.ROOT)
      key != FormatOption && !key.startsWith(JsonPrefix) && key != "path" }
    KafkaMessages(declared, kafka, json)
  }

  /** Where a read starts unless the table says: the topic's first message, in batch and in
   *  streams alike, so that a streaming table over the topic holds what the batch query over
   *  it gives (Spark's own Kafka streams start at the latest offset by default). */
  private val StartingOffsets = "startingoffsets"
  private val StreamOnly = Set("latest")
  private val BatchOnly = Seq("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")

  private def withStart(options: Map[String, String]): Map[String, String] =
    if (options.keys.exists(k => k.toLowerCase(Locale.ROOT).startsWith("starting"))) options
    else options + ("startingOffsets" -> "earliest")

  private def declaredColumns(schema: StructType): StructType = {
    val n = schema.length - MessageColumns.length
    val kept = n >= 0 && schema.fields.drop(n).map(f => (f.name, f.dataType)).sameElements(
      MessageColumns.fields.map(f => (f.name, f.dataType)))
    val declared = if (kept) StructType(schema.fields.take(n)) else schema
    declared.fields.find(f => MessageColumns.fieldNames.contains(f.name.toLowerCase(Locale.ROOT)))
      .foreach { f => throw new IllegalArgumentException(s"Kafka topic table: column " +
        s"${f.name} is one the table adds itself (the message's key, partition, offset and " +
        "timestamp follow the declared columns); give the value's field another name") }
    declared
  }
}
