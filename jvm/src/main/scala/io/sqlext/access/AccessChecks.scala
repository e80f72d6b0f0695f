package io.sqlext.access

import java.util.Locale

import io.sqlext.SqlExtErrors
import org.apache.spark.sql.{AnalysisException, Dataset, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation
import org.apache.spark.sql.catalyst.plans.logical.InsertIntoStatement
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * The check of every statement of a signed-in user who is not an admin (`AccessPolicy`), run
 * by Spark after analysis and before the statement runs: the statement's uses
 * (`PrivilegeBuilder`), each judged by its rule, which a refusal names:
 *
 *  - `jvm`: built-ins that call a JVM method by name (reflect, java_method, try_reflect),
 *    TRANSFORM ... USING, which runs an operating-system command, and JDBC data sources,
 *    whose connection options run statements (an embedded database's in the server);
 *  - `code`: ADD JAR / FILE / ARCHIVE and CREATE FUNCTION from a class (SQL functions stay);
 *  - `settings`: SET of a setting outside `AllowedSettings` (reading one is allowed);
 *  - `paths`: a path in a folder of the catalog, or where no `locations` rule gives the access
 *    (`PathRule`);
 *  - `network`: a server no `servers` rule gives, a connection option that loads code
 *    (`NetworkRule`);
 *  - `tables`: with an access rules file (`AccessRules`), a table privilege the statement needs
 *    that the first matching rule does not give.
 */
case class AccessChecks(session: SparkSession) extends (LogicalPlan => Unit) {

  override def apply(plan: LogicalPlan): Unit =
    if (AccessPolicy.enforced && !ServerRead.inProgress) SessionUsers.userOf(session).foreach {
      user =>
        // What the statement creates is owned by its user: Spark's Thrift server says who that
        // is to the thread that runs a statement (CurrentUserContext, the owner Spark records
        // for a new table); Spark Connect does not, so a known user is said here, as the
        // statement is analysed on that thread.
        if (user.nonEmpty) org.apache.spark.sql.catalyst.CurrentUserContext.CURRENT_USER.set(user)
        if (AccessPolicy.checks(user) && !ServerWork.runningJudged(session, user)) {
          AccessChecks.refusal(session, user, AccessChecks.usesOf(session, plan))
            .foreach { case (rule, why) => throw AccessChecks.refused(user, rule, why) }
          ServerWork.judged(plan, user)
        }
    }
}

object AccessChecks {
  /** The user of `session` whom the checks apply to: signed in on a server with sign-in, and
   *  not an admin. */
  private[access] def checkedUser(session: SparkSession): Option[String] =
    if (AccessPolicy.enforced) SessionUsers.userOf(session).filter(AccessPolicy.checks)
    else None

  private def usesOf(session: SparkSession, plan: LogicalPlan): Seq[Use] = {
    val catalog = session.sessionState.catalog
    PrivilegeBuilder.uses(plan, (db, t) => catalog.tableExists(TableIdentifier(t, Some(db))))
  }

  /** The first of `uses` that the policy refuses `user`: (its rule, why). The catalog's folders
   *  are read once, and only for a statement that names a path. */
  private[access] def refusal(session: SparkSession, user: String,
      uses: Seq[Use]): Option[(String, String)] = {
    lazy val conf = session.sessionState.newHadoopConf()
    lazy val owned = TableFolders.all(session)
    val current = session.catalog.currentDatabase
    uses.iterator.flatMap[(String, String)] {
      case Use.CallsJvm(what) => Some("jvm" -> what)
      case Use.LoadsCode(what) => Some("code" -> what)
      case Use.Sets(key) if !AllowedSettings(key) =>
        Some("settings" -> s"SET $key: a session may set only ${AllowedSettings.names
          .mkString(", ")}")
      case Use.Sets(_) => None
      case files: Use.OnFiles =>
        // The table a statement defines, as the catalog names it (its database, lower case).
        val defines = files.defines.map { case (db, t) =>
          ((if (db.isEmpty) current else db).toLowerCase(Locale.ROOT), t.toLowerCase(Locale.ROOT))
        }
        PathRule.refusal(user, files.copy(defines = defines), conf, owned).map("paths" -> _)
      case network @ (_: Use.Connects | _: Use.ConnectionOption) =>
        NetworkRule.refusal(user, network).map("network" -> _)
      case Use.OnTable(privilege, db, table) =>
        AccessRules.refusal(user, privilege, if (db.isEmpty) current else db, table)
          .map("tables" -> _)
      case Use.ReadsHidden(db, table, column) =>
        Some("tables" -> (s"the column $column of $db.$table is hidden from $user by the " +
          s"access rules (name the columns to read, or SELECT * EXCEPT ($column))"))
      case Use.ShowsMetadata(db, table, what) =>
        val database = if (db.isEmpty) current else db
        AccessRules.restriction(user, database, table).map(_ => "tables" -> (s"$what of " +
          s"$database.$table: the access rules filter or mask the table for $user, and it " +
          "would show what they hide"))
    }.nextOption()
  }

  /** For the session's parser (`parser.RewritingParser`): the file queries of a statement of
   *  `session`'s checked user, judged as soon as it is parsed (csv.`/path`, also in a CTE, a
   *  subquery, EXECUTE IMMEDIATE's statement), before Spark's analysis reads the files to learn
   *  their schema: an error of a file read as another format could show some of its bytes. The
   *  statement's full check follows its analysis. */
  def parsed(session: SparkSession, plan: LogicalPlan): LogicalPlan = {
    if (!ServerRead.inProgress) checkedUser(session).foreach { user =>
      // An INSERT's target is written, not read: the full check judges it.
      val nodes = PlanWalk.nodes(plan)
      val targets = nodes.collect { case i: InsertIntoStatement => i.table }
      val files = nodes.filterNot(n => targets.exists(_ eq n)).collect {
        case u: UnresolvedRelation if u.multipartIdentifier.length == 2 &&
            Names.isFileFormat(u.multipartIdentifier.head) =>
          Use.OnFiles(u.multipartIdentifier(1), FileAccess.Read, "a file query")
      }
      if (files.nonEmpty) {
        refusal(session, user, files).foreach { case (rule, why) => throw refused(user, rule, why) }
      }
    }
    plan
  }

  /** Spark's parser replaces `${env:NAME}` and `${system:NAME}` in a statement's text with
   *  the server process's environment variables and Java system properties
   *  (spark.sql.variable.substitute, on by default), where an operator keeps secrets (a
   *  catalog's password, a Kafka password given to a topic table as `${env:...}`). A checked
   *  user's text may not name them (rule 'settings'); `${var}` and `${spark:...}` (settings,
   *  which SET shows redacted) stay allowed. */
  def serverVariables(session: SparkSession, sqlText: String): Unit =
    if (!ServerRead.inProgress && session.sessionState.conf.variableSubstituteEnabled) {
      ServerVariable.findFirstIn(sqlText).foreach { found =>
        checkedUser(session).foreach { user =>
          throw refused(user, "settings", s"$found...} would read the server's " +
            "environment variables or Java system properties")
        }
      }
    }

  private val ServerVariable = """(?i)\$\{\s*(env|system)\s*:""".r

  /** For Python, which plans streaming statements: the rule 'paths' for `session`'s user and
   *  `access` (READ FILES, WRITE FILES, CREATE EXTERNAL TABLE) at `location`, given as `what`
   *  by a statement that defines the table `defines` (null: none), the refusal's message or
   *  null where it is allowed. */
  def pathRefusal(session: SparkSession, what: String, location: String, access: String,
      defines: String): String =
    checkedUser(session).flatMap { user =>
      val table = Option(defines).map(name => identify(session, name))
      refusal(session, user, Seq(Use.OnFiles(location, FileAccess.of(access), what, table)))
        .map { case (rule, why) => message(user, rule, why) }
    }.orNull

  /** For Python, which runs the streaming statements: the rule 'tables' for `session`'s user
   *  and `privilege` on the table `name` (as SQL names it), the refusal's message or null. */
  def tableRefusal(session: SparkSession, privilege: String, name: String): String =
    checkedUser(session).flatMap(refusalOn(session, _, Privilege.of(privilege), name)).orNull

  /** The rule 'tables' for `user` and `privilege` on the table `name` (as SQL names it). The
   *  name is parsed only for a user the checks apply to: a stream asks before each
   *  micro-batch, and most sessions have no such user. */
  private def refusalOn(session: SparkSession, user: String, privilege: Privilege,
      name: String): Option[String] = {
    val (db, table) = identify(session, name)
    AccessRules.refusal(user, privilege, db, Some(table)).map(message(user, "tables", _))
  }

  private def identify(session: SparkSession, name: String): (String, String) = {
    val id = session.sessionState.sqlParser.parseTableIdentifier(name)
    (id.database.getOrElse(session.catalog.currentDatabase), id.table)
  }

  /** For Python, before each micro-batch of a user's stream: the rule 'tables' for `session`'s
   *  user over the stream's query `plan` (SELECT on its sources) and STREAM on its table
   *  `name`, the refusal's message or null. Checked again each time, so that access rules
   *  changed while the stream runs stop it, as they refuse the user's next statement. */
  def streamRefusal(session: SparkSession, query: Dataset[_], name: String): String =
    checkedUser(session).flatMap { user =>
      val plan = query.queryExecution.analyzed
      val reads = if (!AccessRules.configured) None
        else refusal(session, user, usesOf(session, plan).filter(_.isInstanceOf[Use.OnTable]))
          .map(_._2).orElse(RowPolicies.unguarded(plan, user).headOption.map { case (db, t) =>
            s"the access rules now filter or mask $db.$t for $user, which the stream read as " +
              "it was when it started: it stops (REFRESH STREAMING TABLE starts it again, " +
              "under the rule)"
          })
      reads.map(message(user, "tables", _))
        .orElse(refusalOn(session, user, Privilege.Stream, name))
    }.orNull

  /** For window_state(): the rule 'tables' for `session`'s user and SELECT on the streaming
   *  table `name`; and where its rule filters or masks it, a refusal (the state holds the
   *  stream's rows and values as they were read, which the rule cannot apply to). The
   *  refusal's message or null. */
  def windowStateRefusal(session: SparkSession, name: String): String =
    checkedUser(session).flatMap { user =>
      val (db, table) = identify(session, name)
      refusalOn(session, user, Privilege.Select, name).orElse(
        AccessRules.restriction(user, db, table).map(_ => message(user, "tables",
          s"window_state('$name'): the access rules filter or mask $db.$table for $user, and " +
            "the window state holds the stream's rows as it read them")))
    }.orNull

  /** Whether `session`'s user may read `database`.`table` (SHOW STREAMS lists only those). */
  def readable(session: SparkSession, database: String, table: String): Boolean =
    checkedUser(session).forall(AccessRules.readable(_, database, table))

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
