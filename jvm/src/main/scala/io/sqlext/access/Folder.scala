package io.sqlext.access

import java.net.URI
import java.nio.file.{Files, Paths}
import java.util.Locale

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * A folder (or file) as the file system resolves it, so that two spellings of one place are
 * one `Folder`: relative paths against the file system's working folder, `file:` URIs and
 * plain paths alike, `.` and `..`, trailing slashes, and on the local disk symbolic links (of
 * the part that exists) and the letter case a case-insensitive file system keeps. A path with
 * a glob pattern (`*`, `?`, `[`, `{`, `\`) stands for the folder before its first pattern: the
 * files it may match all lie inside that folder.
 *
 * `scheme` is lower case; `path` is absolute, with `/` between names and none at its end
 * (`/` alone for a root).
 */
final case class Folder(scheme: String, authority: String, path: String) {

  /** Whether `other` is this folder or lies inside it. */
  def contains(other: Folder): Boolean =
    scheme == other.scheme && authority == other.authority &&
      (path == other.path || path == "/" || other.path.startsWith(path + "/"))

  /** Whether one of the two lies inside the other (or they are the same). */
  def overlaps(other: Folder): Boolean = contains(other) || other.contains(this)

  override def toString: String =
    if (scheme == "file") path else s"$scheme://$authority$path"
}

object Folder {
  private val GlobCharacters = "*?[{\\"

  /** `location` as a statement gives it: a path (`/a b`, `../x`, `file:/a b`, `s3a://b/k`),
   *  which Hadoop reads without decoding (as Spark reads LOCATION and file queries). None for
   *  what names no folder that can be judged: an empty string, a pattern in a URI's scheme or
   *  authority. */
  def of(location: String, conf: Configuration): Option[Folder] =
    if (location == null || location.trim.isEmpty) None
    else beforeGlob(location).flatMap(p => Try(new Path(p)).toOption).map(qualified(_, conf))

  /** `uri` as the catalog keeps a location (`file:/a%20b`: encoded). */
  def ofUri(uri: URI, conf: Configuration): Folder = qualified(new Path(uri), conf)

  /** The folder before the first component with a glob pattern (the whole path without one);
   *  None where the pattern comes before the path (in a URI's scheme or authority). */
  private def beforeGlob(location: String): Option[String] = {
    val at = location.indexWhere(GlobCharacters.contains(_))
    val authority = location.indexOf("://")
    val pathStart = if (authority < 0) 0 else location.indexOf('/', authority + 3)
    if (at < 0) Some(location)
    else if (authority >= 0 && (pathStart < 0 || at < pathStart)) None
    else location.lastIndexOf('/', at) match {
      case -1 => Some(".")
      case 0 => Some("/")
      case cut if cut == pathStart || location.take(cut).endsWith(":") =>
        Some(location.take(cut + 1))
      case cut => Some(location.take(cut))
    }
  }

  private def qualified(path: Path, conf: Configuration): Folder = {
    // The file system of the path's scheme qualifies it (a relative path, a path without a
    // scheme under the default file system); a scheme without a file system here stays as
    // written.
    val full = try path.getFileSystem(conf).makeQualified(path) catch {
      case NonFatal(_) => path
    }
    val uri = full.toUri
    val scheme = Option(uri.getScheme).map(_.toLowerCase(Locale.ROOT)).getOrElse("file")
    if (scheme == "file") Folder("file", "", local(Option(uri.getPath).getOrElse("/")))
    else Folder(scheme, Option(uri.getAuthority).map(_.toLowerCase(Locale.ROOT)).getOrElse(""),
      normalizedPath(Option(uri.getPath).getOrElse("/")))
  }

  /** A local path as the file system resolves it: absolute, `..` and `.` resolved, the longest
   *  part that exists resolved to its real path (links, letter case), the rest as written. */
  private def local(path: String): String = {
    val absolute = Paths.get(path).toAbsolutePath.normalize()
    var existing = absolute
    while (existing.getParent != null && !Files.exists(existing)) existing = existing.getParent
    val real = Try(existing.toRealPath()).getOrElse(existing)
    normalizedPath(real.resolve(existing.relativize(absolute)).normalize().toString)
  }

  private def normalizedPath(path: String): String = {
    val normal = Try(new URI(null, null, if (path.startsWith("/")) path else "/" + path, null)
      .normalize().getPath).getOrElse(path)
    val trimmed = normal.replaceAll("/+", "/").stripSuffix("/")
    if (trimmed.isEmpty) "/" else trimmed
  }
}
