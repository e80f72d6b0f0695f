package io.sqlext.access

import java.util.Locale

import scala.jdk.CollectionConverters._
import scala.util.Try

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, HiveTableRelation}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, View}
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

/**
 * What reading a relation of a plan uses: SELECT on a table of the catalog (a view's too: the
 * reader's rights, not the view owner's), READ FILES at the paths of a file query or of a table
 * named by its path (delta.`/path`, Delta's change data feed by path), a JDBC source (rule
 * `jvm`), a Kafka source's connection (`KafkaOptions`). Found by the relation's own fields, so
 * that SQL, a DataFrame, a stream's query and a Connect plan are judged alike.
 */
private[access] object RelationUses {
  import PlanWalk.member

  private val FileQuery = "a file query"

  /** Delta's own reads, of a table it resolved (and the checks judged) already: its log (a
   *  snapshot's state), and the files a command rewrites (DELETE, UPDATE, MERGE, OPTIMIZE) or a
   *  change data feed's. Only Delta's code makes these file indexes; a user's read of a Delta
   *  table, by name or by path, and at any version, is a TahoeLogFileIndex. */
  private val DeltaOwnReads = Set("DeltaLogFileIndex", "TahoeBatchFileIndex",
    "TahoeRemoveFileIndex", "TahoeChangeFileIndex", "CdcAddFileIndex", "PreparedDeltaFileIndex")

  def apply(node: LogicalPlan): Seq[Use] = node match {
    case view: View if !view.isTempView => select(Some(Names.ofIdentifier(view.desc.identifier)))
    case LogicalRelation(_, _, Some(table), _, _) => select(Names.ofCatalogTable(table))
    case LogicalRelation(fs: HadoopFsRelation, _, None, _, _)
        if DeltaOwnReads(fs.location.getClass.getSimpleName) => Nil
    case LogicalRelation(fs: HadoopFsRelation, _, None, _, _) =>
      fs.location.rootPaths.map(p => Use.OnFiles(p.toString, FileAccess.Read, FileQuery))
    case LogicalRelation(relation, _, None, _, _) => unnamed(relation)
    case relation: HiveTableRelation => select(Some(Names.ofIdentifier(relation.tableMeta
      .identifier)))
    case relation: DataSourceV2Relation =>
      relation.identifier match {
        case Some(id) if Names.isPath(id) => Seq(Use.OnFiles(id.name, FileAccess.Read, FileQuery))
        case Some(id) => select(Names.ofConnector(id))
        case None =>
          val options = relation.options.asCaseSensitiveMap().asScala.toMap
          sourceUses(relation.table.getClass.getName, options, paths(options)) ++
            unnamed(relation.table)
      }
    case other if other.getClass.getSimpleName == "StreamingRelationV2" =>
      member(other, "identifier").collect { case Some(id: Identifier) => id } match {
        case Some(id) if Names.isPath(id) => Seq(Use.OnFiles(id.name, FileAccess.Read, FileQuery))
        case Some(id) => select(Names.ofConnector(id))
        case None =>
          val options = member(other, "extraOptions").map(caseSensitive).getOrElse(Map.empty)
          sourceUses(member(other, "sourceName").map(_.toString).getOrElse(""), options,
            paths(options))
      }
    case other if other.getClass.getSimpleName == "StreamingRelation" =>
      member(other, "dataSource").toSeq.flatMap(dataSource)
    case _ => Nil
  }

  /** A v1 DataSource (a stream's source, a temporary view's): its table, or its paths and
   *  options. */
  def dataSource(source: Any): Seq[Use] =
    member(source, "catalogTable") match {
      case Some(Some(table: CatalogTable)) => select(Names.ofCatalogTable(table))
      case _ =>
        val options = member(source, "options").map(caseSensitive).getOrElse(Map.empty)
        val named = member(source, "paths").collect { case s: Seq[_] => s.map(_.toString) }
          .getOrElse(Nil)
        sourceUses(member(source, "className").map(_.toString).getOrElse(""), options,
          named ++ paths(options))
    }

  /** The uses of a data source `provider` with `options` that reads `paths`. */
  def sourceUses(provider: String, options: Map[String, String], paths: Seq[String])
      : Seq[Use] =
    if (provider.toLowerCase(Locale.ROOT).contains("jdbc")) Seq(Use.CallsJvm(JdbcSource))
    else if (KafkaOptions.isKafka(provider)) KafkaOptions.uses(options, "a Kafka source")
    else paths.distinct.map(Use.OnFiles(_, FileAccess.Read, FileQuery))

  val JdbcSource: String = "a JDBC data source connects from the server to a database of " +
    "the client's choosing and runs its statements there (an embedded database runs them in " +
    "the server's JVM)"

  /** A relation without a catalog table: a JDBC or Kafka source, or one of Delta's by path
   *  (its change data feed by path), or any other source with a path option. */
  private def unnamed(relation: Any): Seq[Use] = {
    val name = relation.getClass.getSimpleName
    if (name == "JDBCRelation" || name.startsWith("JDBC")) Seq(Use.CallsJvm(JdbcSource))
    else if (name.startsWith("Kafka")) {
      val options = Seq("sourceOptions", "options", "parameters").iterator
        .flatMap(member(relation, _)).map(caseSensitive).find(_.nonEmpty).getOrElse(Map.empty)
      KafkaOptions.uses(options, "a Kafka source")
    } else {
      val delta = Names.deltaPaths(relation).map(Use.OnFiles(_, FileAccess.Read, FileQuery))
      val options = Seq("options", "parameters", "sourceOptions").iterator
        .flatMap(member(relation, _)).map(caseSensitive).find(_.nonEmpty).getOrElse(Map.empty)
      delta ++ paths(options).map(Use.OnFiles(_, FileAccess.Read, FileQuery))
    }
  }

  private def select(table: Option[(String, String)]): Seq[Use] =
    table.toSeq.map { case (db, t) => Use.OnTable(Privilege.Select, db, Some(t)) }

  /** An options map of any of the forms Spark keeps them in, keys as given. */
  def caseSensitive(options: Any): Map[String, String] = options match {
    case m: org.apache.spark.sql.util.CaseInsensitiveStringMap =>
      m.asCaseSensitiveMap().asScala.toMap
    case m: org.apache.spark.sql.catalyst.util.CaseInsensitiveMap[_] =>
      m.originalMap.map { case (k, v) => k -> String.valueOf(v) }
    case m: scala.collection.Map[_, _] => m.map { case (k, v) => k.toString -> String.valueOf(v) }
      .toMap
    case m: java.util.Map[_, _] => m.asScala.map { case (k, v) => k.toString -> String.valueOf(v) }
      .toMap
    case _ => Map.empty
  }

  private val Json = new ObjectMapper()

  /** The paths an options map names: `path`, and `paths` (a JSON array, as Spark passes the
   *  paths of a v2 source's load(paths*)). */
  def paths(options: Map[String, String]): Seq[String] = options.toSeq.flatMap {
    case (key, value) if key.equalsIgnoreCase("path") => Seq(value)
    case (key, value) if key.equalsIgnoreCase("paths") =>
      Try(Json.readValue(value, classOf[Array[String]]).toSeq).getOrElse(Seq(value))
    case _ => Nil
  }
}

/** How the checks name tables: (database, table) in the catalog's spelling (lower case; a
 *  database of "" is the session's current one), and tables named by their path. */
private[access] object Names {
  import PlanWalk.member

  private val FileFormats = Set("delta", "parquet", "orc", "csv", "json", "text", "avro",
    "binaryfile", "xml", "iceberg")

  /** Whether `namespace` is a file format's (delta.`/path`): a table named by its path. */
  def isFileFormat(namespace: String): Boolean = FileFormats(namespace.toLowerCase(Locale.ROOT))

  def isPath(id: Identifier): Boolean =
    id.namespace.length == 1 && isFileFormat(id.namespace.head)

  def isPath(id: TableIdentifier): Boolean = id.database.exists(isFileFormat)

  def ofIdentifier(id: TableIdentifier): (String, String) =
    (id.database.getOrElse("").toLowerCase(Locale.ROOT), id.table.toLowerCase(Locale.ROOT))

  /** A catalog's table (None: one named by its path, `delta`.`/path`). */
  def ofCatalogTable(table: CatalogTable): Option[(String, String)] =
    if (isPath(table.identifier)) None else Some(ofIdentifier(table.identifier))

  /** A table of the catalog by its connector identifier; a table named by its path is not one,
   *  the rule 'paths' judges it. */
  def ofConnector(id: Identifier): Option[(String, String)] =
    if (id.namespace.length != 1 || isPath(id)) None
    else Some((id.namespace.head.toLowerCase(Locale.ROOT), id.name.toLowerCase(Locale.ROOT)))

  /** Delta's own table objects (a command's table, a clone's source, a change data feed):
   *  their class names, which differ between Delta's versions and shims. */
  val DeltaTables = Set("DeltaTableV2", "CloneDeltaSource")

  /** The paths of Delta's objects in `value` that no catalog table names: a DeltaTableV2 or a
   *  clone's source without a catalog table, a DeltaLog (a command's, a change data feed's),
   *  a snapshot's. */
  def deltaPaths(value: Any): Seq[String] = PlanWalk.scan(value) {
    case delta: AnyRef if DeltaTables(delta.getClass.getSimpleName) =>
      if (member(delta, "catalogTable").exists(_ != None)) None
      else (member(delta, "path") ++ member(delta, "dataPath")).headOption.map(_.toString)
    case log: AnyRef if log.getClass.getSimpleName == "DeltaLog" =>
      member(log, "dataPath").map(_.toString)
    case snapshot: AnyRef if snapshot.getClass.getSimpleName == "Snapshot" =>
      member(snapshot, "deltaLog").flatMap(member(_, "dataPath")).map(_.toString)
  }.flatten
}
