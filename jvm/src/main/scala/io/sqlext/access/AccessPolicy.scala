package io.sqlext.access

import java.nio.file.{Path, Paths}

import scala.jdk.CollectionConverters._

/**
 * What the server's operator configured, set by the server's launcher in its own process
 * (sql_ext/server/access.py) before the server accepts a connection, never from SQL: whether
 * users are checked at all (a server with sign-in), its admins, and the folders that paths in
 * statements (LOCATION, CHECKPOINT, a file query, INSERT OVERWRITE DIRECTORY) may point into.
 */
object AccessPolicy {
  @volatile private var state: Option[(Set[String], Seq[Path])] = None

  /** Checks users from now on: `admins` may do anything; others' paths stay inside `roots`. */
  def enforce(admins: java.util.List[String], roots: java.util.List[String]): Unit =
    state = Some((admins.asScala.toSet, roots.asScala.toSeq.map(normalized)))

  /** Whether users are checked at all (a server with sign-in). */
  def enforced: Boolean = state.isDefined

  /** Whether `user` is checked: sign-in is on and `user` is not an admin (of the command line
   *  or of the access rules file). */
  def checks(user: String): Boolean =
    state.exists { case (admins, _) => !admins(user) && !AccessRules.admins(user) }

  def roots: Seq[Path] = state.map(_._2).getOrElse(Nil)

  /** Whether `location` (a path or a file: URI) lies inside one of the roots. Paths are
   *  compared as the file system resolves them (`..`, `.` and symbolic links, up to the part
   *  that exists); a URI of another scheme is outside. */
  def allows(location: String): Boolean = {
    val path = pathOf(location)
    path.exists(p => roots.exists(root => p.startsWith(root)))
  }

  private def pathOf(location: String): Option[Path] = {
    val uri = scala.util.Try(new java.net.URI(location)).toOption
    uri match {
      case Some(u) if u.getScheme == null => Some(normalized(location))
      case Some(u) if u.getScheme == "file" => Some(normalized(u.getPath))
      case None if !location.contains(":") => Some(normalized(location))
      case _ => None
    }
  }

  /** The real path of `path`: its longest existing part resolved (links too), the rest as
   *  written, `..` and `.` resolved. */
  private def normalized(path: String): Path = {
    val absolute = Paths.get(path).toAbsolutePath.normalize()
    var existing = absolute
    while (existing.getParent != null && !java.nio.file.Files.exists(existing)) {
      existing = existing.getParent
    }
    val real = scala.util.Try(existing.toRealPath()).getOrElse(existing)
    real.resolve(existing.relativize(absolute)).normalize()
  }
}
