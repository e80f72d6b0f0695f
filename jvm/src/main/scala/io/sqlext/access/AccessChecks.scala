package io.sqlext.access

import io.sqlext.SqlExtErrors
import org.apache.spark.sql.{AnalysisException, Dataset, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, ScriptTransformation}
import org.apache.spark.sql.execution.command.{AddArchivesCommand, AddFilesCommand,
  AddJarsCommand, CreateFunctionCommand, LoadDataCommand, SetCommand}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

/**
 * The check of every statement of a signed-in user who is not an admin (`AccessPolicy`), run
 * by Spark after analysis and before the statement runs. Each refusal names its rule:
 *
 *  - `jvm`: built-ins that call a JVM method by name (reflect, java_method, try_reflect),
 *    TRANSFORM ... USING, which runs an operating-system command, and JDBC data sources,
 *    whose connection options run statements (an embedded database's in the server);
 *  - `code`: ADD JAR / FILE / ARCHIVE and CREATE FUNCTION from a class (SQL functions stay);
 *  - `settings`: SET of a setting outside `AllowedSettings` (reading one is allowed);
 *  - `paths`: a path outside the server's roots, in a file query (csv.`/path`), LOCATION, LOAD
 *    DATA, INSERT OVERWRITE DIRECTORY or a table's path option;
 *  - `tables`: with an access rules file (`AccessRules`), a table privilege the statement needs
 *    (`TableAccess`) that the first matching rule does not give.
 */
case class AccessChecks(session: SparkSession) extends (LogicalPlan => Unit) {

  override def apply(plan: LogicalPlan): Unit =
    if (AccessPolicy.enforced) SessionUsers.userOf(session).foreach { user =>
      // What the statement creates is owned by its user: Spark's Thrift server says who that
      // is to the thread that runs a statement (CurrentUserContext, the owner Spark records for
      // a new table); Spark Connect does not, so a known user is said here, as the statement
      // is analysed on that thread.
      if (user.nonEmpty) org.apache.spark.sql.catalyst.CurrentUserContext.CURRENT_USER.set(user)
      if (AccessPolicy.checks(user)) check(plan, user)
    }

  private def check(plan: LogicalPlan, user: String): Unit = {
    def refuse(rule: String, what: String): Nothing =
      throw AccessChecks.refused(user, rule, what)

    plan.foreachWithSubqueries { node =>
      node.expressions.foreach(_.foreach { e =>
        if (AccessChecks.jvmCall(e)) {
          refuse("jvm", s"${e.prettyName}() calls into the server's JVM")
        }
      })
      node match {
        case _: ScriptTransformation =>
          refuse("jvm", "TRANSFORM ... USING runs a command on the server")
        case _: AddJarsCommand | _: AddFilesCommand | _: AddArchivesCommand =>
          refuse("code", "ADD JAR, FILE and ARCHIVE load code and files into the server")
        case f: CreateFunctionCommand =>
          refuse("code", s"CREATE FUNCTION ${f.identifier.funcName} AS '${f.className}' " +
            "loads a class into the server (a SQL function, CREATE FUNCTION ... RETURN, is " +
            "allowed)")
        case SetCommand(Some((key, Some(_)))) if !AllowedSettings(key) =>
          refuse("settings", s"SET $key: a session may set only " +
            AllowedSettings.names.mkString(", "))
        case load: LoadDataCommand =>
          paths(Seq(load.path), "LOAD DATA INPATH")
        case LogicalRelation(jdbc, _, _, _, _) if jdbc.getClass.getSimpleName == "JDBCRelation" =>
          refuse("jvm", AccessChecks.JdbcSource)
        case other if AccessChecks.provider(other).exists(_.toLowerCase.contains("jdbc")) =>
          refuse("jvm", AccessChecks.JdbcSource)
        case LogicalRelation(fs: HadoopFsRelation, _, None, _, _) =>
          paths(fs.location.rootPaths.map(_.toString), "a file query")
        case AccessChecks.PathTable(path) =>
          paths(Seq(path), "a file query")
        case other =>
          AccessChecks.locations(other).foreach { case (what, location) =>
            paths(Seq(location), what)
          }
      }
    }

    def paths(locations: Seq[String], what: String): Unit =
      locations.flatMap(AccessChecks.outside(_, what)).headOption.foreach(refuse("paths", _))

    if (AccessRules.configured) AccessChecks.tablesRefusal(session, plan, user)
      .foreach(refuse("tables", _))
  }
}

object AccessChecks {
  /** The user of `session` whom the checks apply to: signed in on a server with sign-in, and
   *  not an admin. */
  private[access] def checkedUser(session: SparkSession): Option[String] =
    if (AccessPolicy.enforced) SessionUsers.userOf(session).filter(AccessPolicy.checks)
    else None

  /** Why `location` breaks the rule 'paths' (`what` names where it was given), if it does. */
  private def outside(location: String, what: String): Option[String] =
    if (AccessPolicy.allows(location)) None
    else Some(s"$what at '$location' is outside the folders this server allows " +
      s"(${AccessPolicy.roots.mkString(", ")})")

  /** For Python, which plans streaming statements (their CHECKPOINT and LOCATION): the rule
   *  'paths' for `session`'s user, the refusal's message or null where the path is allowed. */
  def pathRefusal(session: SparkSession, what: String, location: String): String =
    checkedUser(session).flatMap(user => outside(location, what).map(message(user, "paths", _)))
      .orNull

  /** For Python, which runs the streaming statements: the rule 'tables' for `session`'s user
   *  and `privilege` on the table `name` (as SQL names it), the refusal's message or null. */
  def tableRefusal(session: SparkSession, privilege: String, name: String): String =
    checkedUser(session).flatMap(refusalOn(session, _, privilege, name)).orNull

  /** The rule 'tables' for `user` and `privilege` on the table `name` (as SQL names it). The
   *  name is parsed only for a user the checks apply to: a stream asks before each
   *  micro-batch, and most sessions have no such user. */
  private def refusalOn(session: SparkSession, user: String, privilege: String,
      name: String): Option[String] = {
    val id = session.sessionState.sqlParser.parseTableIdentifier(name)
    val db = id.database.getOrElse(session.catalog.currentDatabase)
    AccessRules.refusal(user, privilege, db, Some(id.table)).map(message(user, "tables", _))
  }

  /** For Python, before each micro-batch of a user's stream: the rule 'tables' for `session`'s
   *  user over the stream's query `plan` (SELECT on its sources) and STREAM on its table
   *  `name`, the refusal's message or null. Checked again each time, so that access rules
   *  changed while the stream runs stop it, as they refuse the user's next statement. */
  def streamRefusal(session: SparkSession, query: Dataset[_], name: String): String =
    checkedUser(session).flatMap { user =>
      val reads = if (!AccessRules.configured) None
        else tablesRefusal(session, query.queryExecution.analyzed, user)
      reads.map(message(user, "tables", _)).orElse(refusalOn(session, user, "STREAM", name))
    }.orNull

  /** The rule 'tables' over an analysed `plan`: why the first privilege it needs that the
   *  access rules do not give `user` is refused, if one is. */
  private def tablesRefusal(session: SparkSession, plan: LogicalPlan,
      user: String): Option[String] = {
    val catalog = session.sessionState.catalog
    TableAccess.needs(plan, session.catalog.currentDatabase, (db, t) =>
      catalog.tableExists(org.apache.spark.sql.catalyst.TableIdentifier(t, Some(db)))).iterator
      .flatMap(n => AccessRules.refusal(user, n.privilege, n.database, n.table))
      .nextOption()
  }

  /** Whether `session`'s user may read `database`.`table` (SHOW STREAMS lists only those). */
  def readable(session: SparkSession, database: String, table: String): Boolean =
    checkedUser(session).forall(AccessRules.readable(_, database, table))

  /** A reflective read of the member `name` of `target` (plan classes that are private to
   *  Spark or Hive, or differ between versions), None where it has none. */
  private[access] def member(target: Any, name: String): Option[Any] =
    scala.util.Try(target.getClass.getMethod(name).invoke(target)).toOption

  private val JvmCalls = Set("reflect", "java_method", "try_reflect")

  private val JdbcSource = "a JDBC data source connects from the server to a database of " +
    "the client's choosing and runs its statements there (an embedded database runs them in " +
    "the server's JVM)"

  /** The data source a command creates a table or view of (USING ...), by the plan's own
   *  fields: CREATE [TEMPORARY] VIEW ... USING, CREATE TABLE ... USING (v1 and v2 plans). */
  private def provider(node: LogicalPlan): Option[String] = {
    def text(value: Any): Option[String] = value match {
      case s: String => Some(s)
      case Some(s: String) => Some(s)
      case t: org.apache.spark.sql.catalyst.catalog.CatalogTable => t.provider
      case _ => None
    }
    node.getClass.getSimpleName match {
      case "CreateTempViewUsing" | "CreateTableUsing" => member(node, "provider").flatMap(text)
      case "CreateDataSourceTableCommand" | "CreateDataSourceTableAsSelectCommand" =>
        member(node, "table").flatMap(text)
      case "CreateTable" | "CreateTableAsSelect" | "ReplaceTable" | "ReplaceTableAsSelect" =>
        member(node, "tableSpec").flatMap(spec => member(spec.asInstanceOf[AnyRef], "provider"))
          .flatMap(text)
      case _ => None
    }
  }

  private val FileFormats = Set("delta", "parquet", "orc", "csv", "json", "text", "avro",
    "binaryfile", "xml")

  /** Whether `namespace` is a file format's (delta.`/path`): a table named by its path. */
  private[access] def isFileFormat(namespace: String): Boolean =
    FileFormats(namespace.toLowerCase)

  /** A table named by its path (delta.`/path`: a connector's table whose namespace is its
   *  format): its path; a catalog's table does not match. */
  private object PathTable {
    def unapply(node: LogicalPlan): Option[String] = node match {
      case relation: DataSourceV2Relation =>
        relation.identifier.filter(id => id.namespace.length == 1 &&
          FileFormats(id.namespace.head.toLowerCase)).map(_.name)
      case _ => None
    }
  }

  private def jvmCall(e: Expression): Boolean =
    e.getClass.getSimpleName == "CallMethodViaReflection" || JvmCalls(e.prettyName)

  /** The locations a command writes to or reads from, by the plan's own fields: CREATE TABLE's
   *  LOCATION and path option (v1 and v2 plans), INSERT OVERWRITE DIRECTORY, ALTER TABLE ...
   *  SET LOCATION. Found by name so that Hive's own commands need no compile-time link. */
  private[access] def locations(node: LogicalPlan): Seq[(String, String)] = {
    val name = node.getClass.getSimpleName
    def storage(value: Any): Seq[String] = value match {
      case s: org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat =>
        s.locationUri.map(_.toString).toSeq ++ s.properties.get("path")
      case t: org.apache.spark.sql.catalyst.catalog.CatalogTable => storage(t.storage)
      case _ => Nil
    }
    val found: Seq[(String, String)] = name match {
      case "InsertIntoDataSourceDirCommand" | "InsertIntoHiveDirCommand" | "InsertIntoDir" =>
        member(node, "storage").toSeq.flatMap(storage).map("INSERT OVERWRITE DIRECTORY" -> _)
      case "CreateDataSourceTableCommand" | "CreateDataSourceTableAsSelectCommand" |
           "CreateTableCommand" | "CreateHiveTableAsSelectCommand" |
           "OptimizedCreateHiveTableAsSelectCommand" | "CreateTableLikeCommand" =>
        (member(node, "table").toSeq ++ member(node, "tableDesc")).flatMap(storage)
          .map("LOCATION" -> _) ++
          member(node, "location").collect { case Some(l) => "LOCATION" -> l.toString }
      case "CreateTable" | "CreateTableAsSelect" | "ReplaceTable" | "ReplaceTableAsSelect" =>
        member(node, "tableSpec").toSeq.flatMap { spec =>
          val of = member(spec.asInstanceOf[AnyRef], _: String)
          of("location").collect { case Some(l: String) => l }.toSeq ++
            of("options").collect { case o: Map[_, _] => o.asInstanceOf[Map[String, String]] }
              .flatMap(_.get("path"))
        }.map("LOCATION" -> _)
      case "AlterTableSetLocationCommand" | "SetTableLocation" =>
        member(node, "location").collect { case l: String => "SET LOCATION" -> l }.toSeq
      case _ => Nil
    }
    (found ++ node.productIterator.flatMap(pathNamed)).distinct
  }

  /** A table that a command names by its path, not from the catalog: delta.`/path` resolved
   *  for a command (VACUUM, OPTIMIZE, DESCRIBE HISTORY, RESTORE), or Delta's own table objects
   *  without a catalog entry (a clone's source, a restored table). */
  private def pathNamed(value: Any): Option[(String, String)] = value match {
    case r: org.apache.spark.sql.catalyst.analysis.ResolvedTable
        if r.identifier.namespace.length == 1 && isFileFormat(r.identifier.namespace.head) =>
      Some("a table named by its path" -> r.identifier.name)
    case delta: AnyRef if TableAccess.DeltaTables(delta.getClass.getSimpleName) &&
        member(delta, "catalogTable").contains(None) =>
      (member(delta, "path") ++ member(delta, "dataPath")).headOption
        .map("a table named by its path" -> _.toString)
    case _ => None
  }

  private[access] def message(user: String, rule: String, what: String): String =
    s"Refused by the server's access rule '$rule' for user '$user', who is not an admin: " +
      s"$what. An admin of the server can run it (sql-ext thriftserver --admin USER)."

  def refused(user: String, rule: String, what: String): AnalysisException =
    SqlExtErrors.analysis("SQL_EXT_ACCESS_DENIED", message(user, rule, what))
}

/** The settings a user who is not an admin may SET: how their own statements compute and show
 *  results, nothing that reaches the server, its files or other sessions. */
object AllowedSettings {
  val names: Seq[String] = Seq(
    "spark.sql.ansi.enabled",
    "spark.sql.session.timeZone",
    "spark.sql.shuffle.partitions",
    "spark.sql.thriftServer.queryTimeout",  // within the server's ceiling (TimeoutCeiling)
    "spark.sql.adaptive.enabled",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.caseSensitive",
    "spark.sql.legacy.timeParserPolicy",
    "spark.sql.datetime.java8API.enabled",
    "spark.sql.storeAssignmentPolicy",
    "spark.sql.thriftserver.scheduler.pool",
    "spark.sql_ext.rewriter.timeout")

  private val allowed = names.map(_.toLowerCase).toSet

  def apply(key: String): Boolean = allowed(key.trim.toLowerCase)
}
