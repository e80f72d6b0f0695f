package io.sqlext.streaming

import java.net.URI
import java.nio.file.{Files, LinkOption}
import java.nio.file.attribute.PosixFilePermission

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{ChecksumFs, DelegateToFileSystem, FileStatus, FsServerDefaults,
  LocalFileSystem, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.local.LocalConfigKeys
import org.apache.hadoop.fs.permission.FsPermission

/**
 * Hadoop's local file system (`file:`) without forks: the `fs.file.impl` and
 * `fs.AbstractFileSystem.file.impl` of sql-ext's sessions (sql_ext.session.configure).
 *
 * Why: without Hadoop's native library (pip's pyspark has none) Hadoop's local file system runs
 * a process for each file it creates (`chmod`, the file and its checksum) and for each rename
 * through FileContext (`readlink`, to see whether the source and target are links). Measured
 * with Java Flight Recorder's process events: 37 processes for one row appended to a Delta table
 * and carried by a streaming table into its own, 22 of them in Delta's commits (HDFSLogStore
 * and its checksum file), 4 for the data files. Each process costs the JVM a spawn and a reaper
 * thread's wait, on the micro-batch's path.
 *
 * The same answers as Hadoop's: permissions are set with java.nio (the same mode bits, after
 * the same umask, which the callers apply); a link's status is still Hadoop's own (it runs
 * `readlink` for the target, as before), and a path that is not a link answers without one.
 */
class LocalFiles extends LocalFileSystem(new LocalFiles.Raw)

object LocalFiles {

  /** The raw (checksum-less) file system under LocalFiles and LocalFilesFs. */
  class Raw extends RawLocalFileSystem {

    override def setPermission(p: Path, permission: FsPermission): Unit = {
      val file = pathToFile(p).toPath
      if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
        super.setPermission(p, permission) // Hadoop's own error for a missing file
      } else {
        Files.setPosixFilePermissions(file, posix(permission))
      }
    }

    override def getFileLinkStatus(f: Path): FileStatus = {
      if (Files.isSymbolicLink(pathToFile(f).toPath)) super.getFileLinkStatus(f)
      else getFileStatus(f) // what Hadoop returns for a path that is no link
    }
  }

  private val Bits: Seq[(Int, PosixFilePermission)] = {
    import PosixFilePermission._
    Seq(0x100 -> OWNER_READ, 0x80 -> OWNER_WRITE, 0x40 -> OWNER_EXECUTE,
      0x20 -> GROUP_READ, 0x10 -> GROUP_WRITE, 0x8 -> GROUP_EXECUTE,
      0x4 -> OTHERS_READ, 0x2 -> OTHERS_WRITE, 0x1 -> OTHERS_EXECUTE)
  }

  /** The permission's rwx bits (sticky bit aside, as Hadoop's `chmod` of a file gives it). */
  def posix(permission: FsPermission): java.util.Set[PosixFilePermission] = {
    val mode = permission.toShort.toInt
    val set = java.util.EnumSet.noneOf(classOf[PosixFilePermission])
    Bits.foreach { case (bit, flag) => if ((mode & bit) != 0) set.add(flag) }
    set
  }
}

/** FileContext's `file:` (Delta's log store, Spark's checkpoint managers): Hadoop's LocalFs
 *  over LocalFiles.Raw instead of RawLocalFileSystem. */
class LocalFilesFs(uri: URI, conf: Configuration)
  extends ChecksumFs(new LocalFilesFs.Raw(uri, conf))

object LocalFilesFs {
  /** Hadoop's RawLocalFs, over LocalFiles.Raw. */
  class Raw(uri: URI, conf: Configuration)
    extends DelegateToFileSystem(uri, new LocalFiles.Raw, conf, "file", false) {
    override def getUriDefaultPort: Int = -1 // none for file:///
    override def getServerDefaults(f: Path): FsServerDefaults = LocalConfigKeys.getServerDefaults
    @deprecated("as AbstractFileSystem's", "Hadoop 2.8")
    override def getServerDefaults(): FsServerDefaults = LocalConfigKeys.getServerDefaults
    // Local file systems differ in what a valid name is: the operation itself will tell.
    override def isValidName(src: String): Boolean = true
  }
}
