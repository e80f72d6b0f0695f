package io.sqlext.kafka

import io.sqlext.streaming.catalog.StreamProgress
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.connector.read.streaming.{Offset => StreamOffset, ReadLimit,
  SupportsTriggerAvailableNow}
import org.apache.spark.sql.execution.streaming.{Offset, Source}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.LongAccumulator

/**
 * Spark's Kafka micro-batch source with each batch's messages decoded ([[KafkaMessages]]).
 * Offsets, their log, admission control (maxOffsetsPerTrigger, AVAILABLE NOW) and replay after
 * a restart stay Spark's: this source hands every call on, and only turns the batch's rows.
 */
final class DecodedKafkaSource private (kafka: Source with SupportsTriggerAvailableNow,
    messages: KafkaMessages, undecodable: Option[LongAccumulator])
    extends Source with SupportsTriggerAvailableNow {

  override def schema: StructType = messages.schema

  override def getBatch(start: Option[Offset], end: Offset): DataFrame =
    messages.decode(kafka.getBatch(start, end), undecodable)

  override def getOffset: Option[Offset] = kafka.getOffset
  override def latestOffset(start: StreamOffset, limit: ReadLimit): StreamOffset =
    kafka.latestOffset(start, limit)
  override def getDefaultReadLimit: ReadLimit = kafka.getDefaultReadLimit
  override def reportLatestOffset(): StreamOffset = kafka.reportLatestOffset()
  override def prepareForTriggerAvailableNow(): Unit = kafka.prepareForTriggerAvailableNow()
  override def initialOffset(): StreamOffset = kafka.initialOffset()
  override def deserializeOffset(json: String): StreamOffset = kafka.deserializeOffset(json)
  override def commit(end: Offset): Unit = kafka.commit(end)
  override def commit(end: StreamOffset): Unit = kafka.commit(end)
  override def stop(): Unit = kafka.stop()
  override def toString: String = messages.describe
}

object DecodedKafkaSource {
  /** `kafka` decoded; its undecodable messages counted for the streaming table whose
   *  checkpoint holds `metadataPath` (`<checkpoint>/sources/<n>`, SHOW STREAMS). */
  def apply(session: SparkSession, kafka: Source, messages: KafkaMessages, metadataPath: String)
      : Source = kafka match {
    case k: Source with SupportsTriggerAvailableNow =>
      val checkpoint = new Path(metadataPath).getParent.getParent.toString
      new DecodedKafkaSource(k, messages,
        Some(StreamProgress.counters(session, checkpoint).undecodable))
    case other => throw new IllegalStateException(s"sql_ext: Spark's Kafka source " +
      s"(${other.getClass.getName}) no longer supports AVAILABLE NOW")
  }
}
