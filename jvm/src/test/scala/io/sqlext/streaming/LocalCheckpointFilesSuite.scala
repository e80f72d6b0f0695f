package io.sqlext.streaming

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.commons.io.IOUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager
import org.scalatest.funsuite.AnyFunSuite

/** The contract of Spark's checkpoint file managers, checked against Hadoop's local file system
 *  (which reads what LocalCheckpointFiles writes). */
class LocalCheckpointFilesSuite extends AnyFunSuite {

  private def withDir(body: (File, LocalCheckpointFiles) => Unit): Unit = {
    val dir = Files.createTempDirectory("sx_ckpt").toFile
    try body(dir, new LocalCheckpointFiles(new Path(dir.toURI), new Configuration()))
    finally org.apache.commons.io.FileUtils.deleteDirectory(dir)
  }

  private def write(files: LocalCheckpointFiles, path: Path, text: String,
      overwrite: Boolean): Unit = {
    val out = files.createAtomic(path, overwrite)
    out.write(text.getBytes(UTF_8))
    out.close()
  }

  private def read(files: LocalCheckpointFiles, path: Path): String = {
    val in = files.open(path)
    try IOUtils.toString(in, UTF_8) finally in.close()
  }

  /** Names in `dir` and below (hidden ones too), relative. */
  private def names(dir: File): Set[String] = {
    val root = dir.toPath
    val walk = Files.walk(root)
    try walk.filter(Files.isRegularFile(_)).map(p => root.relativize(p).toString)
      .toArray.map(_.toString).toSet
    finally walk.close()
  }

  test("a file appears whole on close, in a new folder, and nothing else is left") {
    withDir { (dir, files) =>
      val path = new Path(new Path(dir.toURI), "state/0/3/1.changelog")
      val out = files.createAtomic(path, overwriteIfPossible = true)
      out.write("half".getBytes(UTF_8))
      assert(!files.exists(path)) // not before close
      out.close()
      assert(read(files, path) == "half")
      assert(names(dir) == Set("state/0/3/1.changelog"))
      assert(files.list(path.getParent).map(_.getPath.getName).toSeq == Seq("1.changelog"))
    }
  }

  test("without overwrite a taken name fails as Spark's metadata logs expect; with it, replaces") {
    withDir { (dir, files) =>
      val path = new Path(new Path(dir.toURI), "offsets/0")
      write(files, path, "first", overwrite = false)
      intercept[FileAlreadyExistsException] { write(files, path, "second", overwrite = false) }
      assert(read(files, path) == "first")
      write(files, path, "third", overwrite = true)
      assert(read(files, path) == "third")
      assert(names(dir) == Set("offsets/0")) // no temporary file stays
    }
  }

  test("cancel leaves nothing, and an existing file as it was") {
    withDir { (dir, files) =>
      val path = new Path(new Path(dir.toURI), "commits/4")
      write(files, path, "kept", overwrite = false)
      val out = files.createAtomic(path, overwriteIfPossible = true)
      out.write("dropped".getBytes(UTF_8))
      out.cancel()
      out.close() // after cancel: nothing
      assert(read(files, path) == "kept")
      assert(names(dir) == Set("commits/4"))
    }
  }

  test("replacing a file that Hadoop wrote drops its checksum file, so it reads back") {
    withDir { (dir, files) =>
      val path = new Path(new Path(dir.toURI), "metadata")
      val hadoop = new FileSystemBasedCheckpointFileManager(path.getParent, new Configuration())
      val out = hadoop.createAtomic(path, overwriteIfPossible = false)
      out.write("written by Hadoop, with a .crc".getBytes(UTF_8))
      out.close()
      assert(names(dir).contains(".metadata.crc"))
      write(files, path, "replaced", overwrite = true)
      assert(read(files, path) == "replaced")
      assert(names(dir) == Set("metadata"))
      files.delete(path)
      assert(!files.exists(path) && names(dir).isEmpty)
    }
  }
}
