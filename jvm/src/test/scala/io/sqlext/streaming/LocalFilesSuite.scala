package io.sqlext.streaming

import java.io.{File, FileNotFoundException}
import java.nio.file.Files
import java.nio.file.attribute.PosixFilePermissions

import jdk.jfr.Recording
import jdk.jfr.consumer.RecordingFile
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileContext, FileSystem, LocalFileSystem, Options, Path}
import org.apache.hadoop.fs.permission.FsPermission
import org.scalatest.funsuite.AnyFunSuite

/** LocalFiles answers as Hadoop's own local file system does (the oracle: a LocalFileSystem and
 *  FileContext without sql-ext's classes), and starts no process doing it. */
class LocalFilesSuite extends AnyFunSuite {

  private def conf(ours: Boolean): Configuration = {
    val c = new Configuration()
    c.setBoolean("fs.file.impl.disable.cache", true)
    if (ours) {
      c.set("fs.file.impl", classOf[LocalFiles].getName)
      c.set("fs.AbstractFileSystem.file.impl", classOf[LocalFilesFs].getName)
    }
    c
  }

  private def withDir(body: File => Unit): Unit = {
    val dir = Files.createTempDirectory("sx_local files").toFile // (a folder with a space)
    try body(dir) finally org.apache.commons.io.FileUtils.deleteDirectory(dir)
  }

  /** What `work` does with a file system and a file context, and the processes it started. */
  private def run(ours: Boolean, dir: File)(work: (FileSystem, FileContext, Path) => Any)
      : (Any, Int) = {
    val c = conf(ours)
    val root = new Path(dir.toURI)
    val fs = root.getFileSystem(c)
    val fc = FileContext.getFileContext(root.toUri, c)
    val recording = new Recording() // Java Flight Recorder: the processes the JVM starts
    val events = Files.createTempFile("sx_processes", ".jfr")
    try {
      recording.enable("jdk.ProcessStart")
      recording.start()
      val result = work(fs, fc, root)
      recording.stop()
      recording.dump(events)
      val started = RecordingFile.readAllEvents(events).size
      (result, started)
    } finally {
      recording.close()
      Files.deleteIfExists(events)
    }
  }

  /** The same work on both; its results and file trees agree; ours started no process (unless
   *  `links`: a link's status is Hadoop's own, with its `readlink`). */
  private def agree(work: (FileSystem, FileContext, Path) => Any): Unit = agree(links = false)(work)

  private def agree(links: Boolean)(work: (FileSystem, FileContext, Path) => Any): Unit = {
    withDir { hadoopDir =>
      withDir { ourDir =>
        val (expected, _) = run(ours = false, hadoopDir)(work)
        val (actual, processes) = run(ours = true, ourDir)(work)
        assert(actual.toString.replace(ourDir.toURI.getPath, "<dir>/") ==
          expected.toString.replace(hadoopDir.toURI.getPath, "<dir>/"))
        assert(tree(ourDir) == tree(hadoopDir))
        assert(links || processes == 0)
      }
    }
  }

  /** Each file and folder below `dir`: its relative name and mode. */
  private def tree(dir: File): Map[String, String] = {
    val root = dir.toPath
    val walk = Files.walk(root)
    try walk.toArray.map(_.asInstanceOf[java.nio.file.Path]).map { p =>
      root.relativize(p).toString -> PosixFilePermissions.toString(Files.getPosixFilePermissions(p))
    }.toMap
    finally walk.close()
  }

  test("the file system is sql-ext's, checksummed as Hadoop's local one") {
    withDir { dir =>
      val fs = new Path(dir.toURI).getFileSystem(conf(ours = true))
      assert(fs.isInstanceOf[LocalFiles] && fs.isInstanceOf[LocalFileSystem])
      assert(FileContext.getFileContext(dir.toURI, conf(ours = true)).getDefaultFileSystem
        .isInstanceOf[LocalFilesFs])
    }
  }

  test("files and folders created with and without a mode, and renamed, as Hadoop does") {
    agree { (fs, fc, root) =>
      val created = new Path(root, "a/b/data.parquet")
      val out = fs.create(created, new FsPermission("640"), true, 4096, 1.toShort, 1 << 20, null)
      out.write(Array[Byte](1, 2, 3))
      out.close()
      fs.mkdirs(new Path(root, "dir"), new FsPermission("750"))
      fs.mkdirs(new Path(root, "plain"))
      fs.create(new Path(root, "plain/x")).close()
      fs.setPermission(new Path(root, "plain/x"), new FsPermission("604"))
      // Delta's log store: FileContext's create and rename of a hidden temporary file
      val temp = new Path(root, "_log/.0.json.tmp")
      val log = fc.create(temp, java.util.EnumSet.of(org.apache.hadoop.fs.CreateFlag.CREATE),
        Options.CreateOpts.createParent())
      log.write("{}".getBytes)
      log.close()
      fc.rename(temp, new Path(root, "_log/0.json"), Options.Rename.NONE)
      val renamed = fs.getFileStatus(new Path(root, "_log/0.json"))
      // (modes are compared in the trees: Hadoop's status reads a mode by running `ls`)
      Seq(fs.getFileStatus(created).getLen, fs.getFileStatus(created).isFile, renamed.getLen,
        renamed.isFile, fs.listStatus(new Path(root, "_log")).map(_.getPath.getName).sorted.toSeq)
    }
  }

  test("a rename onto a taken name fails as Hadoop's; a missing file is not found") {
    agree { (_, fc, root) =>
      Seq("one", "two").foreach { name =>
        val out = fc.create(new Path(root, name),
          java.util.EnumSet.of(org.apache.hadoop.fs.CreateFlag.CREATE))
        out.close()
      }
      val taken = scala.util.Try(fc.rename(new Path(root, "one"), new Path(root, "two")))
        .failed.map(_.getClass.getSimpleName).getOrElse("renamed")
      val missing = scala.util.Try(fc.getFileLinkStatus(new Path(root, "none")))
        .failed.map(_.isInstanceOf[FileNotFoundException]).getOrElse(false)
      Seq(taken, missing)
    }
  }

  test("a link's status is a link's, with its target; a path that is none is its file's") {
    agree(links = true) { (fs, fc, root) =>
      val target = new Path(root, "target")
      fs.create(target).close()
      Files.createSymbolicLink(new File(new File(root.toUri), "link").toPath,
        new File(target.toUri).toPath)
      val link = fc.getFileLinkStatus(new Path(root, "link"))
      val file = fc.getFileLinkStatus(target)
      // (Hadoop's, without its native library, hands `readlink` the path's URI: for it no
      // qualified path is a link; whatever it answers, ours answers the same)
      Seq(link.isSymlink, if (link.isSymlink) link.getSymlink.getName else link.getLen,
        file.isSymlink, file.isFile, file.getLen)
    }
  }
}
