package io.sqlext.access

import java.nio.file.{Files, Path, Paths}
import java.util.Locale
import java.util.regex.{Pattern, PatternSyntaxException}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/**
 * The server's access rules (`--access-rules FILE`), in the spirit of Trino's file-based access
 * control: a JSON file with the server's `admins`, optional `groups` (a name to its users), and
 * three lists of rules, each decided by its first rule that matches (no match: no access):
 *
 *  - `tables`: `user` and `group` (regular expressions, matched whole; absent matches every
 *    user), `database` and `table` (regular expressions matched whole and without regard to
 *    case; absent matches every name) and `privileges`; optionally a row `filter` (a SQL boolean
 *    expression over the table's columns) and `columns` (`{"name": c, "allow": false}`: the
 *    column is hidden; `{"name": c, "mask": "<SQL expression>"}`: it reads as the mask),
 *    applied by [[RowPolicies]];
 *  - `locations`: `user`, `group`, `path` (a folder: the rule matches it and what lies inside)
 *    and `privileges` among READ FILES, WRITE FILES and CREATE EXTERNAL TABLE ([[PathRule]]);
 *  - `servers`: `user`, `group`, `address` (a regular expression matched whole against
 *    `host:port`, without regard to case) and `privileges` (CONNECT): the servers a user's
 *    Kafka tables and reads may connect to ([[NetworkRule]]).
 *
 *     {"admins": ["ops"],
 *      "groups": {"analysts": ["ann", "bob"]},
 *      "tables": [
 *        {"user": "etl", "database": "landing", "privileges": ["SELECT", "INSERT", "STREAM"]},
 *        {"group": "analysts", "database": "sales", "table": "orders", "privileges": ["SELECT"],
 *         "filter": "region = 'EU'", "columns": [{"name": "card", "mask": "'****'"}]},
 *        {"user": ".*", "database": "scratch", "privileges": ["OWNERSHIP"]}],
 *      "locations": [
 *        {"group": "analysts", "path": "/data/landing", "privileges": ["READ FILES"]}],
 *      "servers": [{"user": "etl", "address": "kafka-[0-9]+:9092", "privileges": ["CONNECT"]}]}
 *
 * OWNERSHIP holds every table privilege; STREAM (create, alter, refresh, stop and drop
 * streaming tables) holds the writes a stream makes to its own table, not SELECT. A database as
 * a whole (CREATE / DROP DATABASE) is matched by rules without a `table` or with `.*`.
 *
 * The file is read again when it changes (its modification time or size), before the next
 * check. A file that fails to read at start is an error of the server's start; one that becomes
 * invalid while the server runs refuses every table, location and server to users who are not
 * admins until it is fixed (its admins stay those of the last valid version). Without a file,
 * table access is not checked, and locations and servers are the server's `--allow-path` and
 * `--allow-server` ones.
 */
object AccessRules {
  /** Who a rule is for. */
  private[access] final case class Who(user: Option[Pattern], group: Option[Pattern]) {
    def matches(rules: Rules, name: String): Boolean =
      user.forall(_.matcher(name).matches()) &&
        group.forall(p => rules.groups.exists { case (g, users) => users(name) &&
          p.matcher(g).matches() })
  }

  /** A column of a `tables` rule: hidden (`mask` None), or read as the SQL expression `mask`. */
  final case class ColumnRule(name: String, mask: Option[String])

  private[access] final case class TableRule(who: Who, database: Option[Pattern],
      table: Option[Pattern], privileges: Set[Privilege], filter: Option[String],
      columns: Seq[ColumnRule]) {
    def holds(privilege: Privilege): Boolean = privileges(Privilege.Ownership) ||
      privileges(privilege) || (privileges(Privilege.Stream) && Privilege.HeldByStream(privilege))
    /** Whether the rule changes what its user reads of the table. */
    def restricts: Boolean = filter.isDefined || columns.nonEmpty
  }

  private[access] final case class LocationRule(who: Who, path: String,
      privileges: Set[FileAccess])

  private[access] final case class ServerRule(who: Who, address: Pattern)

  private[access] final case class Rules(admins: Set[String],
      groups: Map[String, Set[String]], tables: Seq[TableRule], locations: Seq[LocationRule],
      servers: Seq[ServerRule])

  @volatile private var source: Option[WatchedFile[Rules]] = None

  /** Checks access by the rules in `file` from now on; an error naming the problem where the
   *  file is invalid. */
  def use(file: String): Unit = source = Some(WatchedFile(Paths.get(file).toAbsolutePath, read))

  /** Whether table access is checked (a rules file is in use). */
  def configured: Boolean = source.isDefined

  /** The admins the file names (of its last valid version). */
  def admins: Set[String] = source.map(_.lastValid.admins).getOrElse(Set.empty)

  /** Whether `user` may read `database`.`table` (or there are no rules). */
  def readable(user: String, database: String, table: String): Boolean =
    refusal(user, Privilege.Select, database, Some(table)).isEmpty

  /** The rules now, or why there are none a user may be given anything by (an invalid file);
   *  None without a file. */
  private[access] def current: Option[Either[String, Rules]] = source.map { file =>
    file.current.left.map { problem =>
      s"the server's access rules file is invalid since it changed ($problem); until an admin " +
        "fixes it, every table, location and server is refused to users who are not admins"
    }
  }

  /** Why `user` may not use `privilege` on `database`.`table` (None: the whole database), if
   *  not: None where the rules allow it or there are no rules. Names are matched without
   *  regard to case and named as the catalog spells them (lower case). */
  def refusal(user: String, privilege: Privilege, db: String,
      tableName: Option[String]): Option[String] = current.flatMap {
    case Left(problem) => Some(problem)
    case Right(rules) =>
      val database = db.toLowerCase(Locale.ROOT)
      val table = tableName.map(_.toLowerCase(Locale.ROOT))
      val target = table.fold(s"database $database")(t => s"$database.$t")
      val rule = tableRule(rules, user, database, table)
      rule match {
        case Some(r) if r.holds(privilege) && (privilege == Privilege.Select || !r.restricts) =>
          None
        case Some(r) if r.holds(privilege) => Some(s"$privilege on $target: the first " +
          s"matching rule filters or masks the table for $user, who may only read it")
        case Some(r) => Some(s"$privilege on $target is not among the privileges the first " +
          s"matching rule gives (${r.privileges.map(_.name).toSeq.sorted.mkString(", ")})")
        case None => Some(s"$privilege on $target: no rule of the access rules file gives " +
          s"$user any access to it")
      }
  }

  /** The first `tables` rule for `user` and the table, where it filters or masks what the user
   *  reads of it (None: the user reads the table as it is, or there are no rules). */
  def restriction(user: String, db: String, table: String): Option[TableRule] =
    current.flatMap(_.toOption).flatMap(rules => tableRule(rules, user,
      db.toLowerCase(Locale.ROOT), Some(table.toLowerCase(Locale.ROOT)))).filter(_.restricts)

  private def tableRule(rules: Rules, user: String, database: String,
      table: Option[String]): Option[TableRule] = {
    def whole(p: Option[Pattern], name: String) = p.forall(_.matcher(name).matches())
    rules.tables.find { rule =>
      rule.who.matches(rules, user) && whole(rule.database, database) && (table match {
        case Some(name) => whole(rule.table, name)
        case None => rule.table.forall(_.pattern == ".*")
      })
    }
  }

  /** The `locations` rules for `user`, in order (Left: why there are none: an invalid file). */
  private[access] def locations(user: String): Either[String, Seq[LocationRule]] =
    current.fold[Either[String, Seq[LocationRule]]](Right(Nil))(_.map(rules =>
      rules.locations.filter(_.who.matches(rules, user))))

  /** The `servers` rules for `user`, in order (Left: why there are none: an invalid file). */
  private[access] def servers(user: String): Either[String, Seq[ServerRule]] =
    current.fold[Either[String, Seq[ServerRule]]](Right(Nil))(_.map(rules =>
      rules.servers.filter(_.who.matches(rules, user))))

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
    known(root, "the file", Set("admins", "groups", "tables", "locations", "servers"))
    val admins = strings(root.get("admins"), "admins")
    val groups = Option(root.get("groups")).map { node =>
      if (!node.isObject) throw new Invalid("groups must be an object of group name to users")
      node.properties().asScala.map(e => e.getKey -> strings(e.getValue, s"groups.${e.getKey}")
        .toSet).toMap
    }.getOrElse(Map.empty)
    def list[T](key: String)(rule: (JsonNode, String) => T): Seq[T] =
      Option(root.get(key)).map { node =>
        if (!node.isArray) throw new Invalid(s"$key must be an array of rules")
        node.elements().asScala.zipWithIndex.map { case (r, i) =>
          val where = s"$key[$i]"
          if (!r.isObject) throw new Invalid(s"$where must be an object")
          rule(r, where)
        }.toSeq
      }.getOrElse(Nil)
    Rules(admins.toSet, groups, list("tables")(tableRule), list("locations")(locationRule),
      list("servers")(serverRule))
  }

  private def tableRule(node: JsonNode, where: String): TableRule = {
    known(node, where, Set("user", "group", "database", "table", "privileges", "filter",
      "columns"))
    val privileges = privilegesOf(node, where, Privilege.all.map(_.name))
      .map(p => Privilege.parse(p).get)
    TableRule(who(node, where), pattern(node, where, "database", ignoreCase = true),
      pattern(node, where, "table", ignoreCase = true), privileges.toSet,
      text(node, where, "filter"), columnRules(node.get("columns"), s"$where.columns"))
  }

  private def columnRules(node: JsonNode, where: String): Seq[ColumnRule] =
    if (node == null) Nil
    else if (!node.isArray) throw new Invalid(s"$where must be an array of columns")
    else node.elements().asScala.zipWithIndex.map { case (column, i) =>
      val at = s"$where[$i]"
      if (!column.isObject) throw new Invalid(s"$at must be an object")
      known(column, at, Set("name", "allow", "mask"))
      val name = text(column, at, "name").getOrElse(throw new Invalid(s"$at has no name"))
      val allow = Option(column.get("allow")).map { value =>
        if (!value.isBoolean) throw new Invalid(s"$at.allow must be true or false")
        value.asBoolean
      }
      (allow, text(column, at, "mask")) match {
        case (Some(false), None) => ColumnRule(name, None)
        case (None | Some(true), Some(mask)) => ColumnRule(name, Some(mask))
        case (Some(false), Some(_)) =>
          throw new Invalid(s"$at has both allow: false and a mask (a hidden column has none)")
        case _ => throw new Invalid(s"$at needs \"allow\": false (hide the column) or a " +
          "\"mask\" (a SQL expression read in its place)")
      }
    }.toSeq

  private def locationRule(node: JsonNode, where: String): LocationRule = {
    known(node, where, Set("user", "group", "path", "privileges"))
    val path = text(node, where, "path").filter(_.trim.nonEmpty)
      .getOrElse(throw new Invalid(s"$where has no path (the folder the rule is for)"))
    LocationRule(who(node, where), path,
      privilegesOf(node, where, FileAccess.all.map(_.name)).map(FileAccess.of).toSet)
  }

  private def serverRule(node: JsonNode, where: String): ServerRule = {
    known(node, where, Set("user", "group", "address", "privileges"))
    privilegesOf(node, where, Seq("CONNECT"))
    ServerRule(who(node, where), pattern(node, where, "address", ignoreCase = true)
      .getOrElse(throw new Invalid(s"$where has no address (host:port, a regular expression)")))
  }

  private def who(node: JsonNode, where: String): Who =
    Who(pattern(node, where, "user", ignoreCase = false),
      pattern(node, where, "group", ignoreCase = false))

  private def text(node: JsonNode, where: String, key: String): Option[String] =
    Option(node.get(key)).map { value =>
      if (!value.isTextual) throw new Invalid(s"$where.$key must be a string")
      value.asText
    }

  private def pattern(node: JsonNode, where: String, key: String,
      ignoreCase: Boolean): Option[Pattern] = text(node, where, key).map { value =>
    try Pattern.compile(value, if (ignoreCase) Pattern.CASE_INSENSITIVE else 0)
    catch {
      case e: PatternSyntaxException =>
        throw new Invalid(s"$where.$key is not a regular expression: ${e.getDescription}")
    }
  }

  /** The rule's privileges, each one of `allowed` (compared in upper case, spaces folded). */
  private def privilegesOf(node: JsonNode, where: String, allowed: Seq[String]): Seq[String] = {
    if (node.get("privileges") == null) {
      throw new Invalid(s"$where has no privileges (an empty list gives none)")
    }
    val listed = strings(node.get("privileges"), s"$where.privileges")
      .map(_.trim.toUpperCase(Locale.ROOT).split("\\s+").mkString(" "))
    listed.find(p => !allowed.contains(p)).foreach { p =>
      throw new Invalid(s"$where.privileges: unknown privilege $p (one of " +
        s"${allowed.mkString(", ")})")
    }
    listed
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
