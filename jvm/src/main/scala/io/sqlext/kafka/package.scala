package io.sqlext

/**
 * A Kafka topic as a table of typed columns (spec/sql.md section 9): the data source the
 * catalog keeps for `CREATE TABLE t (<columns>) USING kafka` ([[io.sqlext.kafka.KafkaTopic]],
 * given by the rule `analysis.KafkaTables`), the decoding of messages that batch reads,
 * streams and `kafka_undecodable(...)` share ([[io.sqlext.kafka.KafkaMessages]]), and the
 * micro-batch source over Spark's own ([[io.sqlext.kafka.DecodedKafkaSource]]).
 *
 * Spark's Kafka connector is reached only by its data source name ("kafka"), never by a class,
 * so loading the extension needs no Kafka jar until a topic table is read.
 *
 * May import: `expressions`, `streaming.catalog` (a stream's counters),
 * `org.apache.spark.sql.sqlext` (a Column of the decoding expression) and Spark.
 * Nothing imports it but `analysis` (the provider's name) and the extension's wiring.
 */
package object kafka
