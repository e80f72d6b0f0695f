package io.sqlext.access

import java.nio.file.{Files, Path}

import scala.util.control.NonFatal

/**
 * A configuration file that the server's operator may edit while it runs (the access rules,
 * the Connect token file): what `read` makes of it, read again when its modification time or
 * size changes, before the next use. Its first read is the caller's to check; a later one that
 * fails is `current`'s Left (what is wrong), while `lastValid` keeps the last good content.
 */
private[access] final class WatchedFile[T](val path: Path, read: Path => Either[String, T],
    first: T) {
  import WatchedFile.Version

  @volatile private var version = Version(WatchedFile.stamp(path), Right(first), first)

  /** The file's content, or what is wrong with it since it last changed. */
  def current: Either[String, T] = latest.content

  /** The content of the file's last valid version. */
  def lastValid: T = latest.lastValid

  private def latest: Version[T] = {
    val now = WatchedFile.stamp(path)
    if (now == version.stamp) version
    else synchronized {
      if (version.stamp != now) {
        val content = read(path)
        version = Version(now, content, content.getOrElse(version.lastValid))
      }
      version
    }
  }
}

private[access] object WatchedFile {
  /** A version of the file: when it was read, what it said (or what is wrong with it). */
  private final case class Version[T](stamp: (Long, Long), content: Either[String, T],
      lastValid: T)

  /** `path` read by `read` now, watched from now on; an IllegalArgumentException naming the
   *  problem where it is invalid. */
  def apply[T](path: Path, read: Path => Either[String, T]): WatchedFile[T] =
    new WatchedFile(path, read, read(path).fold(e => throw new IllegalArgumentException(e),
      identity))

  private def stamp(path: Path): (Long, Long) =
    try (Files.getLastModifiedTime(path).toMillis, Files.size(path))
    catch { case NonFatal(_) => (-1L, -1L) }
}
