package io.sqlext.access

import scala.util.chaining._

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.analysis.{ResolvedIdentifier, ResolvedNamespace,
  ResolvedPersistentView, ResolvedTable}
import org.apache.spark.sql.catalyst.catalog.{CatalogStorageFormat, CatalogTable,
  CatalogTableType}
import org.apache.spark.sql.catalyst.plans.logical.{Command, LogicalPlan, ScriptTransformation}
import org.apache.spark.sql.execution.command.{AddArchivesCommand, AddFilesCommand,
  AddJarsCommand, CreateFunctionCommand, SetCommand}
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

/**
 * What a statement's own node uses (its reads of relations are `RelationUses`'), from one table
 * keyed by the command's class: the table it works on and the privileges that takes, the
 * locations it names and what it does there, the data source it creates a table of, and
 * Delta's commands on a table named by its path. Classes are named, not linked, so that Hive's
 * and Delta's commands (private to them, or different between versions) need no compile-time
 * link; a command that is not known to only read or write is held to the stricter privilege
 * (ALTER on its table, WRITE FILES on its path).
 *
 *  - SELECT: DESCRIBE, SHOW COLUMNS / TBLPROPERTIES / PARTITIONS / CREATE TABLE, Delta's
 *    DESCRIBE HISTORY / DETAIL, CACHE and REFRESH, a clone's or LIKE's source;
 *  - INSERT, UPDATE, DELETE on the table a statement writes (INSERT OVERWRITE and TRUNCATE
 *    delete; MERGE inserts, updates and deletes);
 *  - CREATE for a new table or view (CREATE OR REPLACE also DROP), DROP to drop one;
 *  - ALTER for every other statement on a table (ALTER TABLE, COMMENT ON, OPTIMIZE, VACUUM,
 *    RESTORE, ...);
 *  - CREATE, DROP, ALTER of a database as a whole; CREATE (CREATE OR REPLACE also DROP) and
 *    DROP of a persistent SQL function need the same of its database;
 *  - CREATE EXTERNAL TABLE at a LOCATION (a table's, a database's, a partition's), WRITE FILES
 *    where a statement writes files by path, READ FILES where it reads them.
 */
private[access] object CommandUses {
  import PlanWalk.member

  /** `exists(database, table)`: whether the catalog has the table (a DataFrame's saveAsTable
   *  appends to a table that exists, and creates one that does not). */
  def apply(node: LogicalPlan, exists: (String, String) => Boolean): Seq[Use] = node match {
    case _: ScriptTransformation => Seq(Use.CallsJvm("TRANSFORM ... USING runs a command on " +
      "the server"))
    case _: AddJarsCommand | _: AddFilesCommand | _: AddArchivesCommand =>
      Seq(Use.LoadsCode("ADD JAR, FILE and ARCHIVE load code and files into the server"))
    case f: CreateFunctionCommand => Seq(Use.LoadsCode(s"CREATE FUNCTION " +
      s"${f.identifier.funcName} AS '${f.className}' loads a class into the server (a SQL " +
      "function, CREATE FUNCTION ... RETURN, is allowed)"))
    case SetCommand(Some((key, Some(_)))) => Seq(Use.Sets(key))
    case other if other.getClass.getSimpleName == "ExternalCommandExecutor" =>
      Seq(Use.CallsJvm("an external command runs through a connector of the client's choosing"))
    case other =>
      val defines = Some(target(other)).filter(_ => Defining(other.getClass.getSimpleName))
        .flatten
      source(other) ++ locations(other, defines) ++ pathNamed(other) ++
        tables(other, exists)
  }

  // -- tables --------------------------------------------------------------------------------

  private val Writes: Map[String, Seq[Privilege]] = {
    import Privilege._
    Seq(
      Seq("AppendData", "InsertIntoDataSourceCommand") -> Seq(Insert),
      Seq("OverwriteByExpression", "OverwritePartitionsDynamic") -> Seq(Insert, Delete),
      Seq("DeleteCommand", "DeleteFromTable", "DeltaDelete", "TruncateTableCommand",
        "TruncateDeltaTableCommand", "TruncateTable", "TruncatePartition") -> Seq(Delete),
      Seq("UpdateCommand", "UpdateTable", "DeltaUpdateTable") -> Seq(Update),
      Seq("MergeIntoCommand", "MergeIntoTable", "DeltaMergeInto") -> Seq(Insert, Update, Delete),
      Seq("CreateTable", "CreateTableAsSelect", "CreateDataSourceTableCommand",
        "CreateDataSourceTableAsSelectCommand", "CreateTableCommand",
        "CreateHiveTableAsSelectCommand", "OptimizedCreateHiveTableAsSelectCommand",
        "CreateTableLikeCommand", "CreateDeltaTableCommand") -> Seq(Create),
      Seq("ReplaceTable", "ReplaceTableAsSelect") -> Seq(Create, Drop),
      Seq("DropTable", "DropTableCommand", "DropView") -> Seq(Drop)
    ).flatMap { case (names, privileges) => names.map(_ -> privileges) }.toMap
  }

  /** Commands that create (or replace) the table they name: it may name its own folders. */
  private val Defining = Set("CreateTable", "CreateTableAsSelect", "ReplaceTable",
    "ReplaceTableAsSelect", "CreateDataSourceTableCommand", "CreateDataSourceTableAsSelectCommand",
    "CreateTableCommand", "CreateHiveTableAsSelectCommand", "CreateTableLikeCommand",
    "CreateTableLike", "CreateDeltaTableCommand", "SaveAsV1TableCommand")

  private val SavesByMode = Set("SaveAsV1TableCommand", "CreateDataSourceTableAsSelectCommand",
    "CreateHiveTableAsSelectCommand", "OptimizedCreateHiveTableAsSelectCommand")

  private val Reads = Set("DescribeRelation", "DescribeTableCommand", "DescribeColumn",
    "DescribeColumnCommand", "ShowColumnsCommand", "ShowTableProperties", "ShowCreateTable",
    "ShowCreateTableCommand", "ShowCreateTableAsSerdeCommand", "ShowPartitionsCommand",
    "ShowPartitions", "DescribeDeltaHistoryCommand", "DescribeDeltaHistory",
    "DescribeDeltaDetailCommand", "CacheTable", "CacheTableAsSelect", "UncacheTable",
    "RefreshTable", "RefreshTableCommand", "ShowDeltaTableColumnsCommand",
    "ShowDeltaPartitionsCommand")

  /** What a command shows of a table besides its rows: hidden columns' names, values in the
   *  predicates of its history, a column's minimum and maximum. */
  private val Metadata = Map("ShowCreateTable" -> "SHOW CREATE TABLE",
    "ShowCreateTableCommand" -> "SHOW CREATE TABLE",
    "ShowCreateTableAsSerdeCommand" -> "SHOW CREATE TABLE",
    "DescribeDeltaHistoryCommand" -> "DESCRIBE HISTORY",
    "DescribeDeltaHistory" -> "DESCRIBE HISTORY",
    "DescribeColumn" -> "DESCRIBE of a column", "DescribeColumnCommand" -> "DESCRIBE of a column")

  private val Databases = Map("CreateNamespace" -> Privilege.Create,
    "DropNamespace" -> Privilege.Drop)

  /** Commands on a database that only list or show it, or make it the session's current one. */
  private val ReadOnlyDatabaseCommands = Set("ShowTables", "ShowTablesCommand", "ShowViews",
    "ShowNamespaces", "DescribeNamespace", "SetCatalogAndNamespace", "ShowFunctions",
    "ShowTablesExtended", "ShowTablePartition")

  private def tables(node: LogicalPlan, exists: (String, String) => Boolean): Seq[Use] = {
    import Privilege._
    val name = node.getClass.getSimpleName
    (name, node) match {
      case _ if SavesByMode(name) && member(node, "mode").isDefined =>
        // A DataFrame's saveAsTable (and CTAS): by its save mode.
        val table = target(node)
        named(table, member(node, "mode").map(_.toString) match {
          case Some("Append") if table.exists { case (db, t) => exists(db, t) } => Seq(Insert)
          case Some("Overwrite") => Seq(Create, Drop)
          case _ => Seq(Create)
        })
      case ("InsertIntoHadoopFsRelationCommand" | "InsertIntoHiveTable", _) =>
        val overwrite = member(node, "mode").exists(_.toString == "Overwrite") ||
          member(node, "overwrite").contains(true)
        named(target(node), if (overwrite) Seq(Insert, Delete) else Seq(Insert))
      case ("CreateViewCommand", _) =>
        val persisted = member(node, "viewType").exists(_.toString == "PersistedView")
        val replace = member(node, "replace").contains(true)
        if (!persisted) Nil
        else named(target(node), if (replace) Seq(Create, Drop) else Seq(Create))
      case ("RenameTable", _) =>  // RenameTable(table, newName: Seq[String], isView)
        val renamed = member(node, "newName").collect {
          case Seq(db: String, t: String) => (db.toLowerCase, t.toLowerCase)
          case Seq(t: String) => ("", t.toLowerCase)
        }
        named(target(node), Seq(Alter)) ++ named(renamed, Seq(Create))
      case ("AlterTableRenameCommand", _) =>
        named(target(node), Seq(Alter)) ++ named(member(node, "newName")
          .collect { case id: TableIdentifier => Names.ofIdentifier(id) }, Seq(Create))
      case ("CloneTableCommand", _) =>  // SHALLOW CLONE: its source is read (the target is
        // its parent's, CreateDeltaTableCommand)
        named(member(node, "sourceTable").flatMap(tableOf), Seq(Select))
      case ("CreateTableLikeCommand" | "CreateTableLike", _) =>  // v1 and v2: LIKE's source
        named(target(node), Seq(Create)) ++ named((member(node, "sourceTable") ++
          member(node, "source")).flatMap(tableOf).headOption, Seq(Select))
      case ("ConvertToDeltaCommand", _) => named(target(node), Seq(Alter))
      case ("CreateSQLFunctionCommand" | "DropFunctionCommand", _) => functionUses(node)
      case _ if Writes.contains(name) => named(target(node), Writes(name))
      case _ if Reads(name) => named(target(node), Seq(Select)) ++
        (if (!Metadata.contains(name)) Nil else target(node).toSeq.map { case (db, t) =>
          Use.ShowsMetadata(db, t, Metadata(name)) })
      case _ if Databases.contains(name) || (node.isInstanceOf[Command] && namespace(node)
          .isDefined && target(node).isEmpty) =>
        namespace(node).toSeq.flatMap { db =>
          if (ReadOnlyDatabaseCommands(name)) Nil
          else Seq(Use.OnTable(Databases.getOrElse(name, Alter), db, None))
        }
      case (_, _: Command) => named(target(node), Seq(Alter))
      case _ => Nil
    }
  }

  /** A persistent SQL function's CREATE, CREATE OR REPLACE and DROP: CREATE and DROP on its
   *  database as a whole, as for the database itself (a function is not a table, and another
   *  user's function is called by everyone who calls it by name). A temporary function is its
   *  session's own. */
  private def functionUses(node: LogicalPlan): Seq[Use] =
    if (member(node, "isTemp").contains(true)) Nil
    else {
      val privileges =
        if (node.getClass.getSimpleName == "DropFunctionCommand") Seq(Privilege.Drop)
        else if (member(node, "replace").contains(true)) Seq(Privilege.Create, Privilege.Drop)
        else Seq(Privilege.Create)
      node.productIterator.collectFirst { case f: FunctionIdentifier => f }.toSeq.flatMap { f =>
        privileges.map(Use.OnTable(_, f.database.getOrElse("").toLowerCase, None))
      }
    }

  private def named(id: Option[(String, String)], privileges: Seq[Privilege]): Seq[Use] =
    id.toSeq.flatMap { case (db, t) => privileges.map(Use.OnTable(_, db, Some(t))) }

  /** The table a command works on: the first of its fields that names a catalog's table. */
  private def target(node: LogicalPlan): Option[(String, String)] =
    node.productIterator.flatMap(tableOf).nextOption()

  private def tableOf(value: Any): Option[(String, String)] = value match {
    case t: CatalogTable => Names.ofCatalogTable(t)
    case Some(t: CatalogTable) => Names.ofCatalogTable(t)
    case id: TableIdentifier if !Names.isPath(id) => Some(Names.ofIdentifier(id))
    case r: ResolvedTable => Names.ofConnector(r.identifier)
    case r: ResolvedIdentifier => Names.ofConnector(r.identifier)
    case r: ResolvedPersistentView => Names.ofConnector(r.identifier)
    case r: DataSourceV2Relation => r.identifier.flatMap(Names.ofConnector)
    case LogicalRelation(_, _, Some(t), _, _) => Names.ofCatalogTable(t)
    case delta: AnyRef if delta != null && Names.DeltaTables(delta.getClass.getSimpleName) =>
      member(delta, "catalogTable").collect { case Some(t: CatalogTable) => t }
        .flatMap(Names.ofCatalogTable)
    case _ => None
  }

  private def namespace(node: LogicalPlan): Option[String] =
    node.children.collectFirst {
      case r: ResolvedNamespace if r.namespace.length == 1 => r.namespace.head.toLowerCase
    }

  // -- locations ---------------------------------------------------------------------------

  /** The locations a command names, by the plan's own fields, and what it does there. */
  private def locations(node: LogicalPlan, defines: Option[(String, String)]): Seq[Use] = {
    import FileAccess._
    def at(access: FileAccess, what: String)(locations: Iterable[String]): Seq[Use] =
      locations.toSeq.distinct.map(Use.OnFiles(_, access, what, defines))
    /** A table's own location: given by the statement (an external table), not the catalog's
     *  managed place. */
    def stated(value: Any): Seq[String] = value match {
      case s: CatalogStorageFormat =>
        s.locationUri.map(_.toString).toSeq ++ s.properties.get("path")
      case t: CatalogTable
          if t.tableType == CatalogTableType.EXTERNAL && !Names.isPath(t.identifier) =>
        stated(t.storage)
      case Some(t: CatalogTable) => stated(t)
      case _ => Nil
    }
    def strings(value: Option[Any]): Seq[String] = value.toSeq.flatMap {
      case s: String => Seq(s)
      case Some(s: String) => Seq(s)
      case _ => Nil
    }
    node.getClass.getSimpleName match {
      case "InsertIntoDataSourceDirCommand" | "InsertIntoHiveDirCommand" | "InsertIntoDir" =>
        member(node, "storage").toSeq.flatMap {
          case s: CatalogStorageFormat => s.locationUri.map(_.toString).toSeq
          case _ => Nil
        }.pipe(at(Write, "INSERT OVERWRITE DIRECTORY"))
      case "CreateDataSourceTableCommand" | "CreateDataSourceTableAsSelectCommand" |
           "CreateTableCommand" | "CreateHiveTableAsSelectCommand" |
           "OptimizedCreateHiveTableAsSelectCommand" | "SaveAsV1TableCommand" =>
        (member(node, "table").toSeq ++ member(node, "tableDesc")).flatMap(stated)
          .pipe(at(CreateTable, "LOCATION"))
      case "CreateTableLikeCommand" | "CreateTableLike" =>
        strings(member(node, "location")).pipe(at(CreateTable, "LOCATION"))
      case "CreateTable" if member(node, "tableDesc").isDefined =>  // Spark's v1 CreateTable
        member(node, "tableDesc").toSeq.flatMap(stated).pipe(at(CreateTable, "LOCATION"))
      case "CreateTable" | "CreateTableAsSelect" | "ReplaceTable" | "ReplaceTableAsSelect" =>
        member(node, "tableSpec").toSeq.flatMap { spec =>
          strings(member(spec, "location")) ++ member(spec, "options").collect {
            case o: Map[_, _] => o.asInstanceOf[Map[String, String]] }.toSeq
            .flatMap(RelationUses.paths)
        }.pipe(at(CreateTable, "LOCATION"))
      case "CreateDeltaTableCommand" =>
        member(node, "table").toSeq.flatMap {
          case t: CatalogTable if Names.isPath(t.identifier) =>
            at(Write, "a Delta table created by its path")(t.location.toString :: Nil)
          case t => stated(t).pipe(at(CreateTable, "LOCATION"))
        }
      case "AlterTableSetLocationCommand" | "SetTableLocation" |
           "AlterTableSetLocationDeltaCommand" =>
        strings(member(node, "location")).pipe(at(CreateTable, "SET LOCATION"))
      case "AlterTableAddPartitionCommand" =>
        member(node, "partitionSpecsAndLocs").toSeq.flatMap {
          case parts: Seq[_] => parts.collect { case (_, Some(l: String)) => l }
          case _ => Nil
        }.pipe(at(CreateTable, "a partition's LOCATION"))
      case "AddPartitions" =>
        member(node, "parts").toSeq.flatMap {
          case parts: Seq[_] => parts.flatMap(p => strings(member(p, "location")))
          case _ => Nil
        }.pipe(at(CreateTable, "a partition's LOCATION"))
      case "CreateNamespace" =>
        member(node, "properties").toSeq.flatMap {
          case p: Map[_, _] => p.asInstanceOf[Map[String, String]].get("location").toSeq
          case _ => Nil
        }.pipe(at(CreateTable, "a database's LOCATION"))
      case "SetNamespaceLocation" =>
        strings(member(node, "location")).pipe(at(CreateTable, "a database's LOCATION"))
      case "LoadDataCommand" =>
        // LOAD DATA INPATH (not LOCAL) moves the files it loads: a write where they were.
        val access = if (member(node, "isLocal").contains(true)) Read else Write
        strings(member(node, "path")).pipe(at(access, "LOAD DATA INPATH"))
      case "RefreshResource" => strings(member(node, "path")).pipe(at(Read, "REFRESH"))
      case "CreateTempViewUsing" =>
        member(node, "options").map(RelationUses.caseSensitive).toSeq
          .flatMap(RelationUses.paths).pipe(at(Read, "a temporary view of files"))
      case "InsertIntoHadoopFsRelationCommand" if member(node, "catalogTable").contains(None) =>
        member(node, "outputPath").map(_.toString).toSeq.pipe(at(Write, "a write to a path"))
      case "SaveIntoDataSourceCommand" =>
        member(node, "options").map(RelationUses.caseSensitive).toSeq
          .flatMap(RelationUses.paths).pipe(at(Write, "a write to a path"))
      case "WriteToStream" =>
        val checkpoint =
          if (member(node, "deleteCheckpointOnStop").contains(true)) Nil  // Spark's own folder
          else strings(member(node, "resolvedCheckpointLocation"))
        val sink = if (member(node, "catalogTable").exists(_ != None)) Nil
          else member(node, "sink").toSeq.flatMap(s => (member(s, "path") ++
            member(s, "options").map(RelationUses.caseSensitive).toSeq
              .flatMap(RelationUses.paths)).map(_.toString))
        at(Write, "a stream's checkpoint")(checkpoint) ++ at(Write, "a stream's sink")(sink)
      case "ConvertToDeltaCommand" =>
        (member(node, "tableIdentifier").collect {
          case id: TableIdentifier if Names.isPath(id) => id.table
        } ++ strings(member(node, "deltaPath"))).pipe(at(Write, "CONVERT TO DELTA"))
      case _ => Nil
    }
  }

  /** Tables a command names by their path (Delta's commands on delta.`/path`, a clone's source
   *  by path, a table created by its path): READ FILES for the commands that only read, WRITE
   *  FILES for any other. A command that names a table of the catalog is judged by it alone. */
  private def pathNamed(node: LogicalPlan): Seq[Use] = {
    val name = node.getClass.getSimpleName
    if (target(node).isDefined && name != "CloneTableCommand") Nil
    else {
      val fields = node.productIterator.filterNot(_.isInstanceOf[LogicalPlan]).toSeq ++
        node.children.collect { case r: ResolvedTable => r }
      val identified = PlanWalk.scan(fields) {
        case r: ResolvedTable if Names.isPath(r.identifier) => r.identifier.name
        case r: ResolvedIdentifier if Names.isPath(r.identifier) => r.identifier.name
        case id: TableIdentifier if Names.isPath(id) && name != "ConvertToDeltaCommand" => id.table
      }
      val paths = (identified ++ Names.deltaPaths(fields)).distinct
      val access = if (Reads(name) || name == "CloneTableCommand") FileAccess.Read
        else FileAccess.Write
      val what =
        if (name == "CloneTableCommand") "a clone's source" else "a table named by its path"
      if (name == "CreateDeltaTableCommand") Nil  // its table: `locations`
      else paths.map(Use.OnFiles(_, access, what))
    }
  }

  // -- data sources --------------------------------------------------------------------------

  /** The data source a command creates a table or view of, or writes to (USING ..., a
   *  DataFrame's format), by the plan's own fields: a JDBC source calls into the JVM, a Kafka
   *  source's options connect (`KafkaOptions`). */
  private def source(node: LogicalPlan): Seq[Use] = {
    def text(value: Any): Option[String] = value match {
      case s: String => Some(s)
      case Some(s: String) => Some(s)
      case t: CatalogTable => t.provider
      case _ => None
    }
    def options(value: Option[Any]): Map[String, String] =
      value.map(RelationUses.caseSensitive).getOrElse(Map.empty)
    val (provider, declared): (Option[String], Map[String, String]) =
      node.getClass.getSimpleName match {
        case "CreateTempViewUsing" =>
          (member(node, "provider").flatMap(text), options(member(node, "options")))
        case "CreateTableUsing" =>
          (member(node, "provider").flatMap(text), options(member(node, "options")))
        case "CreateDataSourceTableCommand" | "CreateDataSourceTableAsSelectCommand" =>
          member(node, "table").collect { case t: CatalogTable =>
            (t.provider, t.storage.properties) }.getOrElse((None, Map.empty))
        case "CreateTable" if member(node, "tableDesc").isDefined =>  // Spark's v1 CreateTable
          member(node, "tableDesc").collect { case t: CatalogTable =>
            (t.provider, t.storage.properties) }.getOrElse((None, Map.empty))
        case "CreateTable" | "CreateTableAsSelect" | "ReplaceTable" | "ReplaceTableAsSelect" =>
          member(node, "tableSpec").map { spec =>
            (member(spec, "provider").flatMap(text), options(member(spec, "options")))
          }.getOrElse((None, Map.empty))
        case "SaveIntoDataSourceCommand" =>
          (member(node, "dataSource").map(_.getClass.getName), options(member(node, "options")))
        case "WriteToStream" if !member(node, "catalogTable").exists(_ != None) =>
          member(node, "sink").map { sink =>
            (Some(sink.getClass.getName), Seq("options", "executorKafkaParams", "parameters")
              .iterator.map(k => options(member(sink, k))).find(_.nonEmpty)
              .getOrElse(Map.empty[String, String]))
          }.getOrElse((None, Map.empty))
        case _ => (None, Map.empty)
      }
    provider match {
      case Some(p) if p.toLowerCase.contains("jdbc") => Seq(Use.CallsJvm(RelationUses.JdbcSource))
      case Some(p) if KafkaOptions.isKafka(p) =>
        KafkaOptions.uses(declared, "a Kafka table or write")
      case _ => Nil
    }
  }

}
