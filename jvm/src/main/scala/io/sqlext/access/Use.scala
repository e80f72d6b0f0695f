package io.sqlext.access

/**
 * What a statement does, as the access checks judge it: the typed output of
 * [[PrivilegeBuilder]], which [[AccessChecks]] then judges against the server's policy. Each
 * kind of use is judged by one rule, which a refusal names.
 */
sealed trait Use

object Use {
  /** `privilege` on `database`.`table` (None: the database as a whole); rule `tables`. A
   *  database of "" is the session's current one. */
  final case class OnTable(privilege: Privilege, database: String, table: Option[String])
      extends Use

  /** Files at `location`, given by the statement as `what` (LOCATION, a file query, ...); rule
   *  `paths`. `defines`: the table the statement creates or replaces, whose own folders it may
   *  name again (CREATE OR REPLACE of a table at its own location). */
  final case class OnFiles(location: String, access: FileAccess, what: String,
      defines: Option[(String, String)] = None) extends Use

  /** A column the first matching rule hides from the user (`allow: false`), which the
   *  statement names or selects (`SELECT *`); rule `tables`. */
  final case class ReadsHidden(database: String, table: String, column: String) extends Use

  /** What a statement shows of a table beside its rows (`what`: SHOW CREATE TABLE, DESCRIBE
   *  HISTORY, a column's statistics), refused where the table's rule filters or masks it for
   *  the user; rule `tables`. */
  final case class ShowsMetadata(database: String, table: String, what: String) extends Use

  /** A call into the server's JVM or operating system by name; rule `jvm`. */
  final case class CallsJvm(what: String) extends Use

  /** Code or files loaded into the server; rule `code`. */
  final case class LoadsCode(what: String) extends Use

  /** A session setting changed; rule `settings`. */
  final case class Sets(key: String) extends Use

  /** A connection from the server to `servers` (host:port each) that the statement names, as
   *  a Kafka source or sink's options (`what`); rule `network`. */
  final case class Connects(servers: Seq[String], what: String) extends Use

  /** An option of a connection the statement opens that a user may not set (it loads a class,
   *  or reaches a server the rules do not see); rule `network`. */
  final case class ConnectionOption(key: String, what: String) extends Use
}
