package io.sqlext.kafka

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions.JsonToStructs
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.StructType
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/** The decoding of Kafka messages alone, over hand-made Kafka rows: which messages are rows,
 *  that every other one is counted and readable, and that each message is parsed once. */
class KafkaMessagesSuite extends AnyFunSuite with BeforeAndAfterAll {
  private var spark: SparkSession = _

  override def beforeAll(): Unit = spark = SparkSession.builder().master("local[1]")
    .appName("KafkaMessagesSuite").config("spark.ui.enabled", "false").getOrCreate()
  override def afterAll(): Unit = spark.stop()

  private val declared = StructType.fromDDL("k STRING, n BIGINT, v DOUBLE")
  private val values = Seq[(String, Boolean)](
    """{"k":"a","n":1,"v":1.5}""" -> true,
    """{"k":"b","n":2}""" -> true, // a field left out is NULL
    """{"k":"c","n":null,"v":0.5}""" -> true, // JSON null is NULL
    """not json""" -> false,
    """{"k":"d","n":"three","v":1.0}""" -> false, // a field of the wrong type
    """[{"k":"e","n":5,"v":1.0}]""" -> false, // an array, not an object
    (null, false)) // a tombstone

  /** Spark's Kafka rows for `values`, one partition, offsets in order: an RDD's, as a source's
   *  (a local relation's projections would be evaluated by the optimizer). */
  private def raw: DataFrame = {
    val session = spark
    import session.implicits._
    spark.sparkContext.parallelize(values.map(_._1).zipWithIndex.map { case (v, i) =>
      (s"key$i".getBytes("UTF-8"), Option(v).map(_.getBytes("UTF-8")).orNull, "t", 0, i.toLong,
        java.sql.Timestamp.valueOf("2024-01-01 00:00:00"), 0)
    }, 1).toDF("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
  }

  private def messages = KafkaMessages(declared, Map("format" -> "json"))

  test("decodable messages are rows, every other one is counted and readable with its value") {
    val counter = spark.sparkContext.longAccumulator("undecodable")
    val rows = messages.decode(raw, Some(counter)).collect()
    val kept = values.zipWithIndex.collect { case ((_, true), i) => i.toLong }
    assert(rows.map(_.getAs[Long]("kafka_offset")).toSeq == kept)
    assert(rows.head.getAs[String]("k") == "a" && rows.head.getAs[Double]("v") == 1.5)
    assert(rows(1).isNullAt(rows(1).fieldIndex("v")) && rows(2).isNullAt(rows(2).fieldIndex("n")))
    assert(rows.map(_.getAs[String]("kafka_key")).toSeq == kept.map(i => s"key$i"))
    assert(counter.value == values.count(!_._2))
    val undecodable = messages.undecodable(raw).collect()
    assert(undecodable.map(_.getAs[Long]("kafka_offset")).toSeq ==
      values.zipWithIndex.collect { case ((_, false), i) => i.toLong })
    assert(undecodable.map(r => Option(r.getAs[String]("kafka_value")).orNull).toSeq ==
      values.filterNot(_._2).map(_._1))
  }

  test("each message is parsed once, also under a filter of a decoded column") {
    val counter = spark.sparkContext.longAccumulator("undecodable")
    val filtered = messages.decode(raw, Some(counter)).where(col("v") > 1.0)
    val parses = filtered.queryExecution.optimizedPlan.flatMap(_.expressions.flatMap(
      _.collect { case j: JsonToStructs => j }))
    assert(parses.length == 1, filtered.queryExecution.optimizedPlan.treeString)
    assert(filtered.collect().map(_.getAs[String]("k")).toSeq == Seq("a"))
    assert(counter.value == values.count(!_._2)) // counted in the one pass
  }
}
