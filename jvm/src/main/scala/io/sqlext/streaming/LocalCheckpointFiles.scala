package io.sqlext.streaming

import java.io.{BufferedOutputStream, File, FileOutputStream, IOException}
import java.nio.file.{AtomicMoveNotSupportedException, Files, FileSystemException,
  StandardCopyOption}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileStatus, FSDataInputStream,
  LocalFileSystem, Path, PathFilter, RawLocalFileSystem, UnsupportedFileSystemException}
import org.apache.spark.sql.execution.streaming.checkpointing.{CheckpointFileManager,
  FileContextBasedCheckpointFileManager, FileSystemBasedCheckpointFileManager}
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream

/**
 * The checkpoint files of sql-ext's streams (spark.sql.streaming.checkpointFileManagerClass in
 * a streaming table's session, stream_sink.STREAM_SETTINGS): on a local file system a file is
 * written with java.nio to a hidden temporary file beside it, synced, and renamed into place.
 *
 * Why: without Hadoop's native library (pip's pyspark has none) Hadoop's local file system
 * forks a `chmod` for every file and directory it creates, and Spark's default manager renames
 * through FileContext, which forks again to read permissions: 30-40 ms per file. A micro-batch
 * writes one such file per state partition (RocksDB's changelog) and two on the driver (offsets,
 * commit), so on a local checkpoint most of a small micro-batch's commit time was forks.
 *
 * The same contract as Spark's managers: a file appears whole or not at all (rename), a file
 * that exists is replaced only when the caller allows it (else FileAlreadyExistsException, as
 * Spark's metadata logs expect), cancel leaves nothing. Reading, listing and deleting go
 * through Hadoop's local file system as before (its checksum files are honoured: a replaced
 * file's stale `.crc` goes first). Other file systems get Spark's own manager, unchanged.
 */
class LocalCheckpointFiles(path: Path, hadoopConf: Configuration) extends CheckpointFileManager {

  private val fs = path.getFileSystem(hadoopConf)

  private val local: Option[RawLocalFileSystem] = fs match {
    case checksummed: LocalFileSystem => Some(checksummed.getRaw.asInstanceOf[RawLocalFileSystem])
    case raw: RawLocalFileSystem => Some(raw)
    case _ => None
  }

  private val delegate: CheckpointFileManager =
    if (local.isDefined) new FileSystemBasedCheckpointFileManager(path, hadoopConf)
    else LocalCheckpointFiles.sparkDefault(path, hadoopConf)

  override def createAtomic(path: Path, overwriteIfPossible: Boolean)
      : CancellableFSDataOutputStream = local match {
    case Some(raw) => LocalCheckpointFiles.atomicFile(raw.pathToFile(path), overwriteIfPossible)
    case None => delegate.createAtomic(path, overwriteIfPossible)
  }

  override def mkdirs(path: Path): Unit = local match {
    case Some(raw) => Files.createDirectories(raw.pathToFile(path).toPath)
    case None => delegate.mkdirs(path)
  }

  override def createCheckpointDirectory(): Path = local match {
    case Some(raw) =>
      Files.createDirectories(raw.pathToFile(path).toPath)
      fs.makeQualified(path)
    case None => delegate.createCheckpointDirectory()
  }

  override def open(path: Path): FSDataInputStream = delegate.open(path)
  override def list(path: Path, filter: PathFilter): Array[FileStatus] = delegate.list(path, filter)
  override def exists(path: Path): Boolean = delegate.exists(path)
  override def delete(path: Path): Unit = delegate.delete(path)
  override def isLocal: Boolean = delegate.isLocal
  override def close(): Unit = delegate.close()
}

object LocalCheckpointFiles {

  /** Spark's own choice for a non-local path (CheckpointFileManager.create without a class). */
  private def sparkDefault(path: Path, conf: Configuration): CheckpointFileManager =
    try new FileContextBasedCheckpointFileManager(path, conf)
    catch { case _: UnsupportedFileSystemException =>
      new FileSystemBasedCheckpointFileManager(path, conf) }

  /** The hidden file beside `target` that its content is written to first (Spark's naming:
   *  listings of checkpoint files skip it). */
  private def temporary(target: File): File =
    new File(target.getParentFile, s".${target.getName}.${UUID.randomUUID()}.tmp")

  /** Hadoop's checksum file of `target`, which a replaced file must not keep. */
  private def checksumOf(target: File): File =
    new File(target.getParentFile, s".${target.getName}.crc")

  private def atomicFile(target: File, overwrite: Boolean): CancellableFSDataOutputStream = {
    Files.createDirectories(target.getParentFile.toPath)
    val temp = temporary(target)
    new AtomicFile(target, temp, overwrite, new FileOutputStream(temp))
  }

  private final class AtomicFile(target: File, temp: File, overwrite: Boolean,
      file: FileOutputStream)
    extends CancellableFSDataOutputStream(new BufferedOutputStream(file, 64 * 1024)) {

    private var done = false

    override def close(): Unit = if (!done) {
      done = true
      try {
        flush()
        file.getFD.sync()
        super.close()
        publish()
      } finally {
        temp.delete() // (gone already when published)
      }
    }

    override def cancel(): Unit = if (!done) {
      done = true
      try super.close() catch { case _: IOException => }
      temp.delete()
    }

    private def publish(): Unit = {
      if (!overwrite && target.exists()) throw exists()
      Files.deleteIfExists(checksumOf(target).toPath)
      if (overwrite) {
        try Files.move(temp.toPath, target.toPath, StandardCopyOption.ATOMIC_MOVE)
        catch { case _: AtomicMoveNotSupportedException =>
          Files.move(temp.toPath, target.toPath, StandardCopyOption.REPLACE_EXISTING) }
      } else {
        // A hard link fails when the name is taken, also by a writer racing this one.
        try Files.createLink(target.toPath, temp.toPath)
        catch {
          case _: java.nio.file.FileAlreadyExistsException => throw exists()
          case _: UnsupportedOperationException | _: FileSystemException if !target.exists() =>
            Files.move(temp.toPath, target.toPath) // no hard links here
        }
      }
    }

    private def exists() = new FileAlreadyExistsException(s"$target already exists")
  }
}
