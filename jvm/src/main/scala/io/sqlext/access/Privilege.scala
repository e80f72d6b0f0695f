package io.sqlext.access

import java.util.Locale

/** A privilege on a table (or a database as a whole) that a `tables` rule gives. */
sealed abstract class Privilege(val name: String) {
  override def toString: String = name
}

object Privilege {
  case object Select extends Privilege("SELECT")
  case object Insert extends Privilege("INSERT")
  case object Update extends Privilege("UPDATE")
  case object Delete extends Privilege("DELETE")
  case object Create extends Privilege("CREATE")
  case object Drop extends Privilege("DROP")
  case object Alter extends Privilege("ALTER")
  case object Stream extends Privilege("STREAM")
  case object Ownership extends Privilege("OWNERSHIP")

  val all: Seq[Privilege] = Seq(Select, Insert, Update, Delete, Create, Drop, Alter, Stream,
    Ownership)

  /** What a statement writes to a table's rows (a statement reads its own target without
   *  SELECT). */
  val RowWrites: Set[Privilege] = Set(Insert, Update, Delete)

  /** STREAM holds the writes a stream makes to its own table, not reading it. */
  val HeldByStream: Set[Privilege] = Set(Insert, Update, Delete, Create, Drop, Alter, Stream)

  /** The privilege `name` names (any case), None for none. */
  def parse(name: String): Option[Privilege] =
    all.find(_.name == name.trim.toUpperCase(Locale.ROOT))

  /** For callers that name a privilege by its text (Python's streaming statements). */
  def of(name: String): Privilege = parse(name).getOrElse(
    throw new IllegalArgumentException(s"unknown privilege $name (one of ${all.mkString(", ")})"))
}

/** What a statement does with files it names by path (a `locations` rule gives them). */
sealed abstract class FileAccess(val name: String) {
  override def toString: String = name
}

object FileAccess {
  /** File queries (csv.`/path`, spark.read...), LOAD DATA LOCAL, a temporary view of files. */
  case object Read extends FileAccess("READ FILES")
  /** INSERT OVERWRITE DIRECTORY, DataFrame writes to a path, a stream's checkpoint, Delta's
   *  commands on a table named by its path. */
  case object Write extends FileAccess("WRITE FILES")
  /** A table (or streaming table, or database) whose LOCATION is there; after that it is a
   *  table like any other, under the `tables` rules. */
  case object CreateTable extends FileAccess("CREATE EXTERNAL TABLE")

  val all: Seq[FileAccess] = Seq(Read, Write, CreateTable)

  def parse(name: String): Option[FileAccess] = {
    val words = name.trim.toUpperCase(Locale.ROOT).split("\\s+").mkString(" ")
    all.find(_.name == words)
  }

  def of(name: String): FileAccess = parse(name).getOrElse(
    throw new IllegalArgumentException(s"unknown file access $name (one of ${all.mkString(", ")})"))
}
