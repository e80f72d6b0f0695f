package io.sqlext.access

import java.util.Locale

/**
 * What a Kafka source's or sink's options make the server do, for a user who names them (a
 * `USING kafka` table they create, a `format("kafka")` read or write; reading a table an admin
 * made takes that table's options as they are): connect to the bootstrap servers
 * (`Use.Connects`, rule `network`), read a trust or key store from the server's disk
 * (`Use.OnFiles`, rule `paths`), and nothing else. Options passed to the Kafka client
 * (`kafka.*`) are kept to those that set a connection's security and tuning: the others load
 * classes by name into the server (serializers, interceptors, callback handlers, config
 * providers, login modules), reach servers the rules do not see (OAuth endpoints) or change the
 * server's own behaviour, and are refused (`Use.ConnectionOption`). Spark's own options of the
 * source (subscribe, startingOffsets, ...) are not the client's and stay.
 */
private[access] object KafkaOptions {
  private val Client = "kafka."
  private val Servers = "kafka.bootstrap.servers"
  private val Stores = Set("kafka.ssl.truststore.location", "kafka.ssl.keystore.location")
  private val Jaas = "kafka.sasl.jaas.config"

  /** The login modules a JAAS configuration may name: Kafka's own for SASL/PLAIN, SCRAM and
   *  OAUTHBEARER (with the token given inline), none that reaches another service. */
  private val LoginModules = Set(
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule")

  /** The Kafka client settings (after `kafka.`) a user may give. */
  private val ClientSettings = Set(
    "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.keystore.type", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.key.password", "ssl.cipher.suites",
    "group.id", "client.id", "client.dns.lookup", "isolation.level", "request.timeout.ms",
    "default.api.timeout.ms", "session.timeout.ms", "heartbeat.interval.ms",
    "max.poll.records", "max.poll.interval.ms", "max.partition.fetch.bytes",
    "fetch.min.bytes", "fetch.max.bytes", "fetch.max.wait.ms", "receive.buffer.bytes",
    "send.buffer.bytes", "metadata.max.age.ms", "connections.max.idle.ms",
    "reconnect.backoff.ms", "reconnect.backoff.max.ms", "retry.backoff.ms",
    "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
    "allow.auto.create.topics", "acks", "compression.type", "linger.ms", "batch.size",
    "buffer.memory", "retries", "delivery.timeout.ms", "max.request.size", "max.block.ms",
    "enable.idempotence", "max.in.flight.requests.per.connection", "transaction.timeout.ms")

  def isKafka(provider: String): Boolean = {
    val name = provider.toLowerCase(Locale.ROOT)
    name == "kafka" || name.contains(".kafka.") || name.endsWith(".kafka") ||
      name.contains("kafkasourceprovider") || name.contains("kafkatopic")
  }

  /** The uses of a Kafka source or sink with `options`, named as `what`. */
  def uses(options: Map[String, String], what: String): Seq[Use] = {
    val lower = options.map { case (k, v) => k.trim.toLowerCase(Locale.ROOT) -> v }
    lower.toSeq.sortBy(_._1).flatMap {
      case (Servers, value) =>
        Seq(Use.Connects(value.split(",").map(_.trim).filter(_.nonEmpty).toSeq, what))
      case (key, value) if Stores(key) => Seq(Use.OnFiles(value, FileAccess.Read, s"$what's $key"))
      case (Jaas, value) =>
        modules(value).filterNot(LoginModules).map(m => Use.ConnectionOption(s"$Jaas ($m)", what))
      case (key, _) if key.startsWith(Client) && !ClientSettings(key.stripPrefix(Client)) =>
        Seq(Use.ConnectionOption(key, what))
      case _ => Nil
    }
  }

  /** The login module classes a JAAS configuration names: the first word of each entry
   *  (entries end at a `;` outside quotes). */
  private def modules(jaas: String): Seq[String] = {
    val entries = Seq.newBuilder[String]
    val entry = new StringBuilder
    var quoted = false
    jaas.foreach { c =>
      if (c == '"') quoted = !quoted
      if (c == ';' && !quoted) { entries += entry.toString; entry.clear() } else entry += c
    }
    entries += entry.toString
    entries.result().map(_.trim).filter(_.nonEmpty).map(_.split("\\s+")(0))
  }
}
