package io.sqlext.streaming.catalog

import io.sqlext.Contract

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogUtils
import org.json4s.DefaultFormats
import org.json4s.jackson.Serialization

/**
 * Streaming tables as objects of the catalog (sql.md section 5). A streaming table's definition
 * and its recorded state are properties of its catalog entry (the metastore's table
 * parameters, under the `sql_ext.stream` prefix), so they outlive the process, and listing the
 * streaming tables of a catalog is one metastore call per database. Python writes the
 * definition and state; the running streams are RunningStreams'.
 */
object StreamCatalog {
  /** The prefix of every property this object or the Python side writes. */
  val Prefix = "sql_ext.stream"
  val StateKey = s"$Prefix.state"
  val ErrorKey = s"$Prefix.error"
  val ErrorTimeKey = s"$Prefix.error_time"

  /** [database, table] of a table name as `session` resolves it (current database if none). */
  def identify(session: SparkSession, name: String): Array[String] = {
    val id = session.sessionState.sqlParser.parseTableIdentifier(name)
    val db = id.database.getOrElse(session.catalog.currentDatabase)
    // The catalog's own spelling: Spark's catalog names are case-insensitive, stored lower case.
    Array(db.toLowerCase(java.util.Locale.ROOT), id.table.toLowerCase(java.util.Locale.ROOT))
  }

  /** Whether the catalog has the table, without resolving it (a Delta table whose files are
   *  gone still exists here, where Spark's tableExists fails on the missing path). */
  def exists(session: SparkSession, db: String, table: String): Boolean =
    session.sharedState.externalCatalog.tableExists(db, table)

  /** Where the table keeps its files, from its catalog entry: no Delta log read (DESCRIBE
   *  DETAIL loads the table's snapshot, about 0.5 s at every stream start). A path as Hadoop's
   *  `new Path(String)` and Delta's `forPath` read it (`file:/a b`), not the entry's URI
   *  (`file:/a%20b`), which they would encode again (`a%2520b`). */
  def location(session: SparkSession, db: String, table: String): String =
    CatalogUtils.URIToString(session.sharedState.externalCatalog.getTable(db, table).location)

  /** The `sql_ext.stream*` properties of a table's catalog entry (empty when it has none or
   *  does not exist). */
  def properties(session: SparkSession, db: String, table: String)
      : java.util.Map[String, String] = {
    val catalog = session.sharedState.externalCatalog
    if (!catalog.tableExists(db, table)) return java.util.Collections.emptyMap()
    catalog.getTable(db, table).properties.filter(_._1.startsWith(Prefix)).asJava
  }

  /** `properties` as a JSON object, for Python: one call, where py4j walks a Java map with two
   *  calls per entry and ends the walk with an exception (about 50 ms, at every stream start). */
  def propertiesJson(session: SparkSession, db: String, table: String): String =
    Serialization.write(properties(session, db, table).asScala.toMap)(DefaultFormats)

  /** Who owns the table (its catalog entry's owner). */
  def owner(session: SparkSession, db: String, table: String): String =
    session.sharedState.externalCatalog.getTable(db, table).owner

  /** Sets (or, for a null value, removes) properties of a table's catalog entry, and records
   *  `owner` as its owner where it is not null (the signed-in user who defined a streaming
   *  table: its table is made from Python, outside the statement that names the user). */
  def update(session: SparkSession, db: String, table: String,
      changes: java.util.Map[String, String], owner: String = null): Unit = synchronized {
    val catalog = session.sharedState.externalCatalog
    val entry = catalog.getTable(db, table)
    val (removed, set) = changes.asScala.partition(_._2 == null)
    catalog.alterTable(entry.copy(properties = entry.properties -- removed.keys ++ set,
      owner = Option(owner).getOrElse(entry.owner)))
  }

  /** Every streaming table of the catalog, as a JSON array of [db, table, owner, properties]
   *  (one string for Python, not a walk of Java collections): one metastore call per
   *  database. */
  def list(session: SparkSession): String = {
    val catalog = session.sharedState.externalCatalog
    val tables = catalog.listDatabases().flatMap { db =>
      catalog.getTablesByName(db, catalog.listTables(db)).flatMap { entry =>
        val props = entry.properties.filter(_._1.startsWith(Prefix))
        if (props.isEmpty) None else Some(Seq(db, entry.identifier.table, entry.owner, props))
      }
    }
    Serialization.write(tables)(DefaultFormats)
  }

  /** [last committed batch id, its commit time in ms] of the stream checkpointed at
   *  `checkpoint` (from Spark's commit log), or empty when no batch has committed. */
  def lastCommit(session: SparkSession, checkpoint: String): Array[Long] = {
    val commits = new Path(checkpoint, "commits")
    val fs = commits.getFileSystem(session.sessionState.newHadoopConf())
    if (!fs.exists(commits)) return Array.empty
    val batches = fs.listStatus(commits).filter(_.getPath.getName.forall(_.isDigit))
    if (batches.isEmpty) Array.empty
    else {
      val last = batches.maxBy(_.getPath.getName.toLong)
      Array(last.getPath.getName.toLong, last.getModificationTime)
    }
  }

  /** Spark's error classes that only wrap another error (a micro-batch's failure, an error in
   *  the foreachBatch function that writes it): the error they wrap names the problem. */
  private val WrappingErrors = Seq("[STREAM_FAILED]", "[FOREACH_BATCH_USER_FUNCTION_ERROR]")
  private val SparkErrorLine = """\s*[\w.$]+(Exception|Error): \[[A-Z][A-Z0-9_.]*\]""".r

  /** A stream failure carries the whole stack of every layer: its first line, the innermost
   *  cause and the innermost of Spark's own errors (`...Exception: [CLASS] ...`) name the
   *  problem; at most Contract.ShortErrorLimit characters. The same rule as Python's
   *  sql_ext.streaming.runs.short_error (tests/test_contract.py compares them). */
  def shortError(message: String): String = {
    val lines = message.linesIterator.toSeq
    val causes = lines.filter(_.trim.startsWith("Caused by:"))
    val errors = lines.drop(1).filter(line => SparkErrorLine.findPrefixOf(line).isDefined &&
      !WrappingErrors.exists(line.contains)).map(_.trim)
    val kept = lines.take(1) ++ causes.takeRight(1)
    val text = (kept ++ errors.takeRight(1).filterNot(kept.mkString("\n").contains))
      .mkString("\n")
    if (text.length <= Contract.ShortErrorLimit) text
    else text.take(Contract.ShortErrorLimit) + " ..."
  }
}
