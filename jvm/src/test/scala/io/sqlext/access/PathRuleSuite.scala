package io.sqlext.access

import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

/** The rule `paths` without Spark: folders compared as the file system resolves them (`..`,
 *  links, `file:` URIs, trailing slashes, globs), the catalog's folders refused by path (in
 *  them, or holding them), the first `locations` rule deciding elsewhere, `--allow-path` as a
 *  rule for everyone after the file's; and the rule `network` for Kafka's options. */
class PathRuleSuite extends AnyFunSuite {
  private val conf = new Configuration()
  private val top: Path = Files.createTempDirectory("paths rule").toRealPath()
  private val warehouse = Files.createDirectories(top.resolve("warehouse"))
  private val landing = Files.createDirectories(top.resolve("landing"))
  private val readings = Files.createDirectories(warehouse.resolve("sales.db/readings"))
  private val external = Files.createDirectories(landing.resolve("ext"))

  private def folder(location: String): Folder = Folder.of(location, conf).get

  private val owned = Seq(
    TableFolders.Owned(folder(readings.toString), "table sales.readings", Some(("sales", "readings"))),
    TableFolders.Owned(folder(external.toString), "table sales.ext", Some(("sales", "ext"))),
    TableFolders.Owned(folder(landing.resolve("ck").toString),
      "the checkpoint of streaming table sales.live", Some(("sales", "live"))),
    TableFolders.Owned(folder(warehouse.toString), "the warehouse", None))

  private def rules(text: String): Unit = {
    val file = Files.createTempFile(top, "rules", ".json")
    Files.writeString(file, text)
    AccessRules.use(file.toString)
  }

  private def refusal(user: String, location: String, access: FileAccess,
      defines: Option[(String, String)] = None): Option[String] =
    PathRule.refusal(user, Use.OnFiles(location, access, "a file query", defines), conf, owned)

  test("one place, however it is spelt") {
    val at = folder(readings.toString)
    for (spelling <- Seq(s"$readings/", s"file:$readings", s"file://$readings",
        s"$warehouse/sales.db/../sales.db/readings", s"$warehouse/./sales.db//readings")) {
      assert(folder(spelling) == at, spelling)
    }
    assert(folder(s"$warehouse/sales.db/read*") == folder(s"$warehouse/sales.db"))
    assert(folder(s"$warehouse/*/readings") == folder(warehouse.toString))
    assert(folder("s3a://Bucket/a/../b/") == Folder("s3a", "bucket", "/b"))
    assert(Folder.of("s3a://b{1,2}/x", conf).isEmpty)  // a pattern in the bucket: not judged
    val link = landing.resolve("link")
    Files.createSymbolicLink(link, readings)
    assert(folder(link.resolve("part-0.parquet").toString) ==
      folder(readings.resolve("part-0.parquet").toString))
    assert(folder(readings.toString).contains(folder(readings.resolve("_delta_log").toString)))
    assert(!folder(readings.toString).contains(folder(s"$readings-2")))
  }

  test("the catalog's folders are refused by path: in them or holding them") {
    AccessPolicy.enforce(List.empty[String].asJava, List(top.toString).asJava,
      List.empty[String].asJava)
    rules("""{"tables": []}""")
    val inside = refusal("bob", s"$readings/_delta_log/00000000000000000000.json", FileAccess.Read)
    assert(inside.exists(_.contains("inside the folder of table sales.readings")), inside)
    assert(refusal("bob", warehouse.resolve("sales.db").toString, FileAccess.Write)
      .exists(_.contains("inside the warehouse")))
    assert(refusal("bob", top.toString, FileAccess.Read)
      .exists(_.contains("a folder that holds the folder of table sales.readings")))
    assert(refusal("bob", external.resolve("x").toString, FileAccess.CreateTable)
      .exists(_.contains("table sales.ext")))
    assert(refusal("bob", s"${landing.resolve("ck")}/commits", FileAccess.Write)
      .exists(_.contains("the checkpoint of streaming table sales.live")))
    // A statement that (re)defines a table may name its own folders, no other's.
    assert(refusal("bob", external.toString, FileAccess.CreateTable, Some(("sales", "ext")))
      .isEmpty)
    assert(refusal("bob", landing.resolve("ck").toString, FileAccess.Write, Some(("sales", "ext")))
      .isDefined)
    // --allow-path (top) gives the rest, every access.
    assert(refusal("bob", landing.resolve("new").toString, FileAccess.Write).isEmpty)
  }

  test("the first locations rule decides; --allow-path comes after the file's rules") {
    AccessPolicy.enforce(List.empty[String].asJava, List(landing.toString).asJava,
      List.empty[String].asJava)
    rules(s"""{"groups": {"analysts": ["cy"]},
      | "locations": [
      |   {"user": "ann", "path": "$landing/drop", "privileges": ["WRITE FILES"]},
      |   {"group": "analysts", "path": "$top/raw", "privileges": ["read files"]},
      |   {"user": "ann", "path": "$top", "privileges": ["READ FILES", "CREATE EXTERNAL TABLE"]}]}"""
      .stripMargin)
    assert(refusal("ann", s"$landing/drop/x", FileAccess.Write).isEmpty)
    assert(refusal("ann", s"$landing/drop/x", FileAccess.Read).exists(_.contains(
      "READ FILES is not among the privileges that the first locations rule for " +
        s"'$landing/drop' gives ann (WRITE FILES)")))
    assert(refusal("ann", s"$top/raw/a.csv", FileAccess.CreateTable).isEmpty)
    assert(refusal("cy", s"$top/raw/a.csv", FileAccess.Read).isEmpty)
    assert(refusal("cy", s"$top/raw/a.csv", FileAccess.Write).isDefined)
    assert(refusal("cy", s"$top/other", FileAccess.Read).exists(_.contains(
      "no locations rule gives cy READ FILES there")))
    // --allow-path: everyone's, after the file's rules (ann's first rule still decides there).
    assert(refusal("cy", s"$landing/x", FileAccess.Write).isEmpty)
    assert(refusal("ann", s"$landing/drop/x", FileAccess.Read).isDefined)
    // The rules of the catalog's folders come first, whatever the locations rules say.
    assert(refusal("ann", s"$external/y", FileAccess.Read).exists(_.contains("table sales.ext")))
  }

  test("the servers a user's Kafka options name, and the options that load code") {
    AccessPolicy.enforce(List.empty[String].asJava, List.empty[String].asJava,
      List("127.0.0.1:9092").asJava)
    rules("""{"servers": [{"user": "etl", "address": "kafka-[0-9]+:9093", "privileges": ["CONNECT"]}]}""")
    def network(user: String, options: Map[String, String]): Seq[String] =
      KafkaOptions.uses(options, "a Kafka table").flatMap(NetworkRule.refusal(user, _))
    assert(network("etl", Map("kafka.bootstrap.servers" -> "kafka-1:9093,KAFKA-2:9093",
      "subscribe" -> "t")).isEmpty)
    assert(network("ann", Map("kafka.bootstrap.servers" -> "127.0.0.1:9092")).isEmpty)
    assert(network("ann", Map("kafka.bootstrap.servers" -> "kafka-1:9093")).exists(
      _.contains("connects to kafka-1:9093: no servers rule gives ann CONNECT there")))
    val plain = "org.apache.kafka.common.security.plain.PlainLoginModule required " +
      "username=\"u\" password=\"p;w\";"
    assert(network("etl", Map("kafka.sasl.jaas.config" -> plain,
      "kafka.security.protocol" -> "SASL_SSL", "kafka.sasl.mechanism" -> "PLAIN")).isEmpty)
    assert(network("etl", Map("kafka.sasl.jaas.config" ->
      "com.sun.security.auth.module.JndiLoginModule required user.provider.url=\"ldap://x\";"))
      .exists(_.contains("JndiLoginModule")))
    for (key <- Seq("kafka.interceptor.classes", "kafka.config.providers",
        "kafka.sasl.login.callback.handler.class", "kafka.sasl.oauthbearer.token.endpoint.url")) {
      assert(network("etl", Map(key -> "x")).exists(_.contains(s"sets the option $key")), key)
    }
    assert(KafkaOptions.uses(Map("kafka.ssl.truststore.location" -> "/etc/passwd"), "t") ==
      Seq(Use.OnFiles("/etc/passwd", FileAccess.Read, "t's kafka.ssl.truststore.location")))
  }

  test("a rule of locations or servers that is not well formed names itself") {
    def problem(text: String): String =
      intercept[IllegalArgumentException](rules(text)).getMessage
    assert(problem("""{"locations": [{"user": "a", "privileges": ["READ FILES"]}]}""")
      .contains("locations[0] has no path"))
    assert(problem("""{"locations": [{"path": "/x", "privileges": ["READ"]}]}""")
      .contains("locations[0].privileges: unknown privilege READ (one of READ FILES, WRITE " +
        "FILES, CREATE EXTERNAL TABLE)"))
    assert(problem("""{"servers": [{"privileges": ["CONNECT"]}]}""")
      .contains("servers[0] has no address"))
    assert(problem("""{"tables": [{"privileges": [], "columns": [{"name": "c"}]}]}""")
      .contains("tables[0].columns[0] needs \"allow\": false"))
    assert(problem("""{"tables": [{"privileges": [], "columns": [{"name": "c", "allow": false,""" +
      """ "mask": "1"}]}]}""").contains("both allow: false and a mask"))
  }
}
