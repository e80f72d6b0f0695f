package io.sqlext.access

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.analysis.{ResolvedIdentifier, ResolvedNamespace,
  ResolvedPersistentView, ResolvedTable}
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, HiveTableRelation}
import org.apache.spark.sql.catalyst.plans.logical.{Command, LogicalPlan, View}
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

/**
 * The table privileges an analysed statement needs (`AccessRules`), read from the plan's own
 * nodes so that SQL, a DataFrame and a stream's query are judged alike:
 *
 *  - SELECT on every table and view it reads (a view's own tables too: the reader's rights,
 *    not the view owner's), and on the table of DESCRIBE, SHOW COLUMNS / TBLPROPERTIES /
 *    PARTITIONS / CREATE TABLE, Delta's DESCRIBE HISTORY / DETAIL, CACHE and REFRESH;
 *  - INSERT, UPDATE, DELETE on the table a statement writes (INSERT OVERWRITE and TRUNCATE
 *    delete; MERGE inserts, updates and deletes); such a statement reads its own table without
 *    SELECT (DELETE and UPDATE find their rows), any other table it reads needs SELECT;
 *  - CREATE for a new table or view (CREATE OR REPLACE also DROP), DROP to drop one;
 *  - ALTER for every other statement on a table (ALTER TABLE, COMMENT ON, OPTIMIZE, VACUUM,
 *    RESTORE, ...): what is not known to only read or write is held to the stricter privilege;
 *  - CREATE, DROP, ALTER of a database as a whole; CREATE (CREATE OR REPLACE also DROP) and
 *    DROP of a persistent SQL function need the same of its database.
 *
 * Temporary views and functions are the session's own: they need nothing, what they read does
 * (a SQL function's body is part of the plan of the statement that calls it).
 */
object TableAccess {
  import AccessChecks.member

  /** `privilege` on `database`.`table` (None: the database as a whole). */
  final case class Need(privilege: String, database: String, table: Option[String])

  /** `exists(database, table)`: whether the catalog has the table (a DataFrame's saveAsTable
   *  appends to a table that exists, and creates one that does not). */
  def needs(plan: LogicalPlan, currentDatabase: String,
      exists: (String, String) => Boolean): Seq[Need] = {
    val all = nodes(plan)
    val statements = all.flatMap(statementNeeds(_, exists))
    val written = statements.filter(n => WritePrivileges(n.privilege))
      .map(n => (n.database, n.table)).toSet
    val reads = all.flatMap(read).flatMap(id => named(Some(id), Seq("SELECT")))
      .filterNot(n => written((n.database, n.table)))
    (statements ++ reads).distinct.map {
      case Need(privilege, "", table) => Need(privilege, currentDatabase, table)
      case need => need
    }
  }

  private val WritePrivileges = Set("INSERT", "UPDATE", "DELETE")

  /** Every node of `plan`: children, subqueries, and plans that commands keep as fields (MERGE's
   *  source, a view's query). */
  private def nodes(plan: LogicalPlan): Seq[LogicalPlan] = {
    val found = Seq.newBuilder[LogicalPlan]
    def visit(p: LogicalPlan): Unit = p.foreachWithSubqueries { node =>
      found += node
      node.productIterator.foreach {
        case inner: LogicalPlan if !node.children.exists(_ eq inner) => visit(inner)
        case Some(inner: LogicalPlan) if !node.children.exists(_ eq inner) => visit(inner)
        case _ =>
      }
    }
    visit(plan)
    found.result()
  }

  /** The table a relation reads, if it is a table of the catalog. */
  private def read(node: LogicalPlan): Option[(String, String)] = node match {
    case view: View if !view.isTempView => Some(ofIdentifier(view.desc.identifier))
    case LogicalRelation(_, _, Some(table), _, _) => Some(ofIdentifier(table.identifier))
    case relation: HiveTableRelation => Some(ofIdentifier(relation.tableMeta.identifier))
    case relation: DataSourceV2Relation => relation.identifier.flatMap(catalogTable)
    case other if other.getClass.getSimpleName == "StreamingRelationV2" =>
      member(other, "identifier").collect { case Some(id: Identifier) => id }.flatMap(catalogTable)
    case other if other.getClass.getSimpleName == "StreamingRelation" =>
      member(other, "dataSource").flatMap(member(_, "catalogTable"))
        .collect { case Some(t: CatalogTable) => ofIdentifier(t.identifier) }
    case _ => None
  }

  private val Writes: Map[String, Seq[String]] = Seq(
    Seq("AppendData", "InsertIntoDataSourceCommand") -> Seq("INSERT"),
    Seq("OverwriteByExpression", "OverwritePartitionsDynamic") -> Seq("INSERT", "DELETE"),
    Seq("DeleteCommand", "DeleteFromTable", "DeltaDelete", "TruncateTableCommand",
      "TruncateDeltaTableCommand",
      "TruncateTable", "TruncatePartition") -> Seq("DELETE"),
    Seq("UpdateCommand", "UpdateTable", "DeltaUpdateTable") -> Seq("UPDATE"),
    Seq("MergeIntoCommand", "MergeIntoTable", "DeltaMergeInto") -> Seq("INSERT", "UPDATE", "DELETE"),
    Seq("CreateTable", "CreateTableAsSelect", "CreateDataSourceTableCommand",
      "CreateDataSourceTableAsSelectCommand", "CreateTableCommand",
      "CreateHiveTableAsSelectCommand", "OptimizedCreateHiveTableAsSelectCommand",
      "CreateTableLikeCommand", "CreateDeltaTableCommand") -> Seq("CREATE"),
    Seq("ReplaceTable", "ReplaceTableAsSelect") -> Seq("CREATE", "DROP"),
    Seq("DropTable", "DropTableCommand", "DropView") -> Seq("DROP")
  ).flatMap { case (names, privileges) => names.map(_ -> privileges) }.toMap

  private val SavesByMode = Set("SaveAsV1TableCommand", "CreateDataSourceTableAsSelectCommand",
    "CreateHiveTableAsSelectCommand", "OptimizedCreateHiveTableAsSelectCommand")

  private val Reads = Set("DescribeRelation", "DescribeTableCommand", "DescribeColumn",
    "DescribeColumnCommand", "ShowColumnsCommand", "ShowTableProperties", "ShowCreateTable",
    "ShowCreateTableCommand", "ShowCreateTableAsSerdeCommand", "ShowPartitionsCommand",
    "ShowPartitions", "DescribeDeltaHistoryCommand", "DescribeDeltaHistory",
    "DescribeDeltaDetailCommand", "CacheTable", "CacheTableAsSelect", "UncacheTable",
    "RefreshTable", "RefreshTableCommand")

  private val Databases = Map("CreateNamespace" -> "CREATE", "DropNamespace" -> "DROP")

  /** `privileges` on the table `id` (a database of "" is the session's current one). */
  private def named(id: Option[(String, String)], privileges: Seq[String]): Seq[Need] =
    id.toSeq.flatMap { case (db, t) => privileges.map(Need(_, db, Some(t))) }

  /** What a statement node itself needs (its reads are found separately). */
  private def statementNeeds(node: LogicalPlan, exists: (String, String) => Boolean)
      : Seq[Need] = {
    val name = node.getClass.getSimpleName
    (name, node) match {
      case (_, _) if SavesByMode(name) && member(node, "mode").isDefined =>
        // A DataFrame's saveAsTable (and CTAS): by its save mode.
        val table = target(node)
        val privileges = member(node, "mode").map(_.toString) match {
          case Some("Append") if table.exists { case (db, t) => exists(db, t) } => Seq("INSERT")
          case Some("Overwrite") => Seq("CREATE", "DROP")
          case _ => Seq("CREATE")
        }
        named(table, privileges)
      case ("InsertIntoHadoopFsRelationCommand" | "InsertIntoHiveTable", _) =>
        val overwrite = member(node, "mode").exists(_.toString == "Overwrite") ||
          member(node, "overwrite").contains(true)
        named(target(node), if (overwrite) Seq("INSERT", "DELETE") else Seq("INSERT"))
      case ("CreateViewCommand", _) =>
        val persisted = member(node, "viewType").exists(_.toString == "PersistedView")
        val replace = member(node, "replace").contains(true)
        if (!persisted) Nil
        else named(target(node), if (replace) Seq("CREATE", "DROP") else Seq("CREATE"))
      case ("RenameTable", _) =>  // RenameTable(table, newName: Seq[String], isView)
        val renamed = member(node, "newName").collect {
          case Seq(db: String, t: String) => (db.toLowerCase, t.toLowerCase)
          case Seq(t: String) => ("", t.toLowerCase)
        }
        named(target(node), Seq("ALTER")) ++ named(renamed, Seq("CREATE"))
      case ("AlterTableRenameCommand", _) =>
        named(target(node), Seq("ALTER")) ++ named(member(node, "newName")
          .collect { case id: TableIdentifier => ofIdentifier(id) }, Seq("CREATE"))
      case ("CloneTableCommand", _) =>  // SHALLOW CLONE: its source is read (the target is
        // its parent's, CreateDeltaTableCommand)
        named(member(node, "sourceTable").flatMap(tableOf), Seq("SELECT"))
      case ("CreateTableLikeCommand" | "CreateTableLike", _) =>  // v1 and v2: LIKE's source
        named(target(node), Seq("CREATE")) ++ named((member(node, "sourceTable") ++
          member(node, "source")).flatMap(tableOf).headOption, Seq("SELECT"))
      case ("CreateSQLFunctionCommand" | "DropFunctionCommand", _) => functionNeeds(node)
      case _ if Writes.contains(name) => named(target(node), Writes(name))
      case _ if Reads(name) => named(target(node), Seq("SELECT"))
      case _ if Databases.contains(name) || (node.isInstanceOf[Command] && namespace(node)
          .isDefined && target(node).isEmpty) =>
        namespace(node).toSeq.flatMap { db =>
          val privilege = Databases.getOrElse(name, "ALTER")
          if (ReadOnlyDatabaseCommands(name)) Nil else Seq(Need(privilege, db, None))
        }
      case (_, _: Command) => named(target(node), Seq("ALTER"))
      case _ => Nil
    }
  }

  /** A persistent SQL function's CREATE, CREATE OR REPLACE and DROP: CREATE and DROP on its
   *  database as a whole, as for the database itself (a function is not a table, and another
   *  user's function is called by everyone who calls it by name). A temporary function is its
   *  session's own. */
  private def functionNeeds(node: LogicalPlan): Seq[Need] =
    if (member(node, "isTemp").contains(true)) Nil
    else {
      val privileges =
        if (node.getClass.getSimpleName == "DropFunctionCommand") Seq("DROP")
        else if (member(node, "replace").contains(true)) Seq("CREATE", "DROP")
        else Seq("CREATE")
      node.productIterator.collectFirst { case f: FunctionIdentifier => f }.toSeq.flatMap { f =>
        privileges.map(Need(_, f.database.getOrElse("").toLowerCase, None))
      }
    }

  /** Commands on a database that only list or show it, or make it the session's current one. */
  private val ReadOnlyDatabaseCommands = Set("ShowTables", "ShowTablesCommand", "ShowViews",
    "ShowNamespaces", "DescribeNamespace", "SetCatalogAndNamespace", "ShowFunctions",
    "ShowTablesExtended", "ShowTablePartition")

  /** The table a command works on: the first of its fields that names a catalog's table. */
  private def target(node: LogicalPlan): Option[(String, String)] =
    node.productIterator.flatMap(tableOf).nextOption()

  private def tableOf(value: Any): Option[(String, String)] = value match {
    case t: CatalogTable => Some(ofIdentifier(t.identifier))
    case Some(t: CatalogTable) => Some(ofIdentifier(t.identifier))
    case id: TableIdentifier => Some(ofIdentifier(id))
    case r: ResolvedTable => catalogTable(r.identifier)
    case r: ResolvedIdentifier => catalogTable(r.identifier)
    case r: ResolvedPersistentView => catalogTable(r.identifier)
    case r: DataSourceV2Relation => r.identifier.flatMap(catalogTable)
    case LogicalRelation(_, _, Some(t), _, _) => Some(ofIdentifier(t.identifier))
    case delta if delta != null && DeltaTables(delta.getClass.getSimpleName) =>
      member(delta, "catalogTable").collect { case Some(t: CatalogTable) => ofIdentifier(t.identifier) }
    case _ => None
  }

  /** Delta's own table objects in its commands (RESTORE, DESCRIBE HISTORY, a clone's source):
   *  a catalog's table where their `catalogTable` is one. */
  private[access] val DeltaTables = Set("DeltaTableV2", "CloneDeltaSource")

  private def namespace(node: LogicalPlan): Option[String] =
    node.children.collectFirst {
      case r: ResolvedNamespace if r.namespace.length == 1 => r.namespace.head.toLowerCase
    }

  private def ofIdentifier(id: TableIdentifier): (String, String) =
    (id.database.getOrElse("").toLowerCase, id.table.toLowerCase)

  /** A table of the catalog by its connector identifier; a table named by its path
   *  (delta.`/path`, whose namespace is its format) is not one, the rule 'paths' judges it. */
  private def catalogTable(id: Identifier): Option[(String, String)] =
    if (id.namespace.length != 1 || AccessChecks.isFileFormat(id.namespace.head)) None
    else Some((id.namespace.head.toLowerCase, id.name.toLowerCase))
}
