package io.sqlext.access

import java.nio.file.{Files, Path, Paths}
import java.util.regex.{Pattern, PatternSyntaxException}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/**
 * The server's access rules (`--access-rules FILE`), in the spirit of Trino's file-based access
 * control: a JSON file with the server's `admins`, optional `groups` (a name to its users), and
 * `tables` rules. A rule has `user` and `group` (regular expressions, matched whole; absent
 * matches every user), `database` and `table` (regular expressions matched whole and without
 * regard to case; absent matches every name) and `privileges`. The first rule that matches a
 * user and a table decides; no match means no access.
 *
 *     {"admins": ["ops"],
 *      "groups": {"analysts": ["ann", "bob"]},
 *      "tables": [
 *        {"user": "etl", "database": "landing", "privileges": ["SELECT", "INSERT", "STREAM"]},
 *        {"group": "analysts", "database": "sales|landing", "privileges": ["SELECT"]},
 *        {"user": ".*", "database": "scratch", "privileges": ["OWNERSHIP"]}]}
 *
 * OWNERSHIP holds every privilege; STREAM (create, alter, refresh, stop and drop streaming
 * tables) holds the writes a stream makes to its own table (CREATE, INSERT, UPDATE, DELETE,
 * DROP, ALTER), not SELECT. A database as a whole (CREATE / DROP DATABASE) is matched by rules
 * without a `table` or with `.*`.
 *
 * The file is read again when it changes (its modification time or size), before the next
 * check. A file that fails to read at start is an error of the server's start; one that becomes
 * invalid while the server runs refuses every table to users who are not admins until it is
 * fixed (its admins stay those of the last valid version). Without a file, table access is not
 * checked.
 */
object AccessRules {
  val Privileges: Seq[String] =
    Seq("SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "STREAM", "OWNERSHIP")
  private val HeldByStream = Set("INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "STREAM")

  private[access] final case class Rule(user: Option[Pattern], group: Option[Pattern],
      database: Option[Pattern], table: Option[Pattern], privileges: Set[String]) {
    def holds(privilege: String): Boolean = privileges("OWNERSHIP") || privileges(privilege) ||
      (privileges("STREAM") && HeldByStream(privilege))
  }

  private[access] final case class Rules(admins: Set[String],
      groups: Map[String, Set[String]], tables: Seq[Rule])

  @volatile private var source: Option[WatchedFile[Rules]] = None

  /** Checks table access by the rules in `file` from now on; an error naming the problem
   *  where the file is invalid. */
  def use(file: String): Unit = source = Some(WatchedFile(Paths.get(file).toAbsolutePath, read))

  /** Whether table access is checked (a rules file is in use). */
  def configured: Boolean = source.isDefined

  /** The admins the file names (of its last valid version). */
  def admins: Set[String] = source.map(_.lastValid.admins).getOrElse(Set.empty)

  /** Whether `user` may read `database`.`table` (or there are no rules). */
  def readable(user: String, database: String, table: String): Boolean =
    refusal(user, "SELECT", database, Some(table)).isEmpty

  /** Why `user` may not use `privilege` on `database`.`table` (None: the whole database), if
   *  not: None where the rules allow it or there are no rules. Names are matched without
   *  regard to case and named as the catalog spells them (lower case). */
  def refusal(user: String, privilege: String, db: String,
      tableName: Option[String]): Option[String] = source.flatMap { file =>
    val database = db.toLowerCase
    val table = tableName.map(_.toLowerCase)
    file.current match {
      case Left(problem) =>
        Some(s"the server's access rules file is invalid since it changed ($problem); until " +
          "an admin fixes it, every table is refused to users who are not admins")
      case Right(rules) =>
        val target = table.fold(s"database $database")(t => s"$database.$t")
        val rule = rules.tables.find(applies(rules, _, user, database, table))
        if (rule.exists(_.holds(privilege))) None
        else Some(rule.fold(s"$privilege on $target: no rule of the access rules file gives " +
          s"$user any access to it")(r => s"$privilege on $target is not among the " +
          s"privileges the first matching rule gives (${r.privileges.toSeq.sorted.mkString(", ")})"))
    }
  }

  private def applies(rules: Rules, rule: Rule, user: String, database: String,
      table: Option[String]): Boolean = {
    def whole(p: Option[Pattern], name: String) = p.forall(_.matcher(name).matches())
    val groups = rules.groups.collect { case (group, users) if users(user) => group }
    whole(rule.user, user) &&
      rule.group.forall(p => groups.exists(p.matcher(_).matches())) &&
      whole(rule.database, database) &&
      (table match {
        case Some(name) => whole(rule.table, name)
        case None => rule.table.forall(_.pattern == ".*")
      })
  }

  private val Mapper = new ObjectMapper()

  /** The rules of the file at `path`, or what is wrong with it (naming the file and where). */
  private[access] def read(path: Path): Either[String, Rules] =
    try {
      val root = Mapper.readTree(Files.readAllBytes(path))
      Right(parse(root))
    } catch {
      case e: Invalid => Left(s"$path: ${e.getMessage}")
      case NonFatal(e) => Left(s"$path: ${e.getClass.getSimpleName}: ${e.getMessage}")
    }

  private final class Invalid(message: String) extends Exception(message)

  private[access] def parse(root: JsonNode): Rules = {
    if (root == null || !root.isObject) throw new Invalid("the rules must be a JSON object")
    known(root, "the file", Set("admins", "groups", "tables"))
    val admins = strings(root.get("admins"), "admins")
    val groups = Option(root.get("groups")).map { node =>
      if (!node.isObject) throw new Invalid("groups must be an object of group name to users")
      node.properties().asScala.map(e => e.getKey -> strings(e.getValue, s"groups.${e.getKey}")
        .toSet).toMap
    }.getOrElse(Map.empty)
    val tables = Option(root.get("tables")).map { node =>
      if (!node.isArray) throw new Invalid("tables must be an array of rules")
      node.elements().asScala.zipWithIndex.map { case (rule, i) => tableRule(rule, i) }.toSeq
    }.getOrElse(Nil)
    Rules(admins.toSet, groups, tables)
  }

  private def tableRule(node: JsonNode, index: Int): Rule = {
    val where = s"tables[$index]"
    if (!node.isObject) throw new Invalid(s"$where must be an object")
    known(node, where, Set("user", "group", "database", "table", "privileges"))
    def pattern(key: String, ignoreCase: Boolean): Option[Pattern] = Option(node.get(key)).map {
      value =>
        if (!value.isTextual) throw new Invalid(s"$where.$key must be a string")
        try Pattern.compile(value.asText, if (ignoreCase) Pattern.CASE_INSENSITIVE else 0)
        catch {
          case e: PatternSyntaxException =>
            throw new Invalid(s"$where.$key is not a regular expression: ${e.getDescription}")
        }
    }
    val privileges = strings(node.get("privileges"), s"$where.privileges").map(_.toUpperCase)
    privileges.find(p => !Privileges.contains(p)).foreach { p =>
      throw new Invalid(s"$where.privileges: unknown privilege $p (one of " +
        s"${Privileges.mkString(", ")})")
    }
    if (node.get("privileges") == null) {
      throw new Invalid(s"$where has no privileges (an empty list gives none)")
    }
    Rule(pattern("user", ignoreCase = false), pattern("group", ignoreCase = false),
      pattern("database", ignoreCase = true), pattern("table", ignoreCase = true),
      privileges.toSet)
  }

  private def known(node: JsonNode, where: String, keys: Set[String]): Unit =
    node.fieldNames().asScala.find(!keys(_)).foreach { key =>
      throw new Invalid(s"$where has an unknown key '$key' (known: " +
        s"${keys.toSeq.sorted.mkString(", ")})")
    }

  private def strings(node: JsonNode, where: String): Seq[String] =
    if (node == null) Nil
    else if (node.isArray && node.elements().asScala.forall(_.isTextual)) {
      node.elements().asScala.map(_.asText).toSeq
    } else throw new Invalid(s"$where must be a list of strings")
}
