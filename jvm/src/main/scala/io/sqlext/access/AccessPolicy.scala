package io.sqlext.access

import scala.jdk.CollectionConverters._

/**
 * What the server's operator configured, set by the server's launcher in its own process
 * (sql_ext/server/access.py) before the server accepts a connection, never from SQL: whether
 * users are checked at all (a server with sign-in), its admins, the folders of `--allow-path`
 * (a `locations` rule for every user, with every file privilege, after the rules file's own)
 * and the servers of `--allow-server` (a `servers` rule for every user, likewise).
 */
object AccessPolicy {
  private final case class State(admins: Set[String], paths: Seq[String], servers: Seq[String])

  @volatile private var state: Option[State] = None

  /** Checks users from now on: `admins` may do anything; others reach the files of `paths`
   *  and the servers `servers` (host:port each), besides what the access rules give them. */
  def enforce(admins: java.util.List[String], paths: java.util.List[String],
      servers: java.util.List[String]): Unit =
    state = Some(State(admins.asScala.toSet, paths.asScala.toSeq, servers.asScala.toSeq))

  /** Whether users are checked at all (a server with sign-in). */
  def enforced: Boolean = state.isDefined

  /** Whether `user` is checked: sign-in is on and `user` is not an admin (of the command line
   *  or of the access rules file). */
  def checks(user: String): Boolean =
    state.exists(s => !s.admins(user) && !AccessRules.admins(user))

  /** The folders of `--allow-path`, as given. */
  def allowedPaths: Seq[String] = state.map(_.paths).getOrElse(Nil)

  /** The servers of `--allow-server` (host:port), as given. */
  def allowedServers: Seq[String] = state.map(_.servers).getOrElse(Nil)
}
