package io.sqlext.access

import scala.jdk.CollectionConverters._

import org.apache.hive.service.auth.TSetIpAddressProcessor
import org.apache.hive.service.cli.{CLIService, OperationHandle, RowSet, RowSetFactory,
  TableSchema}
import org.apache.hive.service.cli.operation.{GetColumnsOperation, GetTablesOperation}
import org.apache.hive.service.cli.thrift.ThriftCLIService
import org.apache.hive.service.rpc.thrift.{TCLIService, TOperationHandle}

/**
 * The JDBC metadata calls (DatabaseMetaData.getTables and getColumns: what a SQL client's
 * browser and dbt's catalog list) show a signed-in user who is not an admin only the tables the
 * access rules give them SELECT on, and no column their rule hides. HiveServer2 runs a metadata call as it answers it and keeps
 * its rows until the client fetches them: the guarded call lets it run, then takes out of its
 * rows those of other tables, before the client can fetch any.
 */
private[access] object MetadataFilter {
  /** Both calls' rows name the table's database and name in their 2nd and 3rd columns;
   *  GetColumns' the column in its 4th. */
  private val DatabaseColumn = 1
  private val TableColumn = 2
  private val ColumnColumn = 3

  private lazy val CliServiceField = {
    val field = classOf[ThriftCLIService].getDeclaredField("cliService")
    field.setAccessible(true)
    field
  }

  private def rowSetField(operation: Class[_]) = {
    val field = operation.getDeclaredField("rowSet")
    field.setAccessible(true)
    field
  }
  private lazy val TablesRows = rowSetField(classOf[GetTablesOperation])
  private lazy val ColumnsRows = rowSetField(classOf[GetColumnsOperation])

  /** Keeps, of the rows of the operation `handle` of `iface`, those the signed-in user may
   *  read. */
  private def filter(iface: TCLIService.Iface, handle: TOperationHandle): Unit = {
    val user = Option(TSetIpAddressProcessor.getUserName).getOrElse("")
    if (handle != null && AccessRules.configured && AccessPolicy.checks(user)) {
      val cli = CliServiceField.get(iface).asInstanceOf[CLIService]
      val operation = cli.getSessionManager.getOperationManager
        .getOperation(new OperationHandle(handle))
      val field = operation match {
        case _: GetTablesOperation => TablesRows
        case _: GetColumnsOperation => ColumnsRows
        case other => throw new IllegalStateException(s"not a metadata call: ${other.getClass}")
      }
      // A new set of the rows to keep takes the operation's (a set's columns cannot be emptied
      // and filled again); the iterator hands out one array for every row, hence the copies.
      val all = field.get(operation).asInstanceOf[RowSet]
      val kept = RowSetFactory.create(new TableSchema(operation.getResultSetSchema),
        operation.getProtocolVersion, false)
      all.iterator.asScala.map(_.clone())
        .filter(row => readable(user, row(DatabaseColumn), row(TableColumn)))
        .filter(row => field != ColumnsRows || shown(user, row))
        .foreach(kept.addRow)
      field.set(operation, kept)
    }
  }

  /** A row of a session's temporary view (no database) stays: it is the session's own. */
  private def readable(user: String, database: Any, table: Any): Boolean =
    Option(database).map(_.toString).filter(_.nonEmpty)
      .forall(AccessRules.readable(user, _, String.valueOf(table)))

  /** A column of GetColumns that the user's rule does not hide. */
  private def shown(user: String, row: Array[AnyRef]): Boolean =
    Option(row(DatabaseColumn)).map(_.toString).filter(_.nonEmpty).forall { db =>
      !HideHiddenColumns.hidden(user, db, String.valueOf(row(TableColumn)))
        .contains(String.valueOf(row(ColumnColumn)).toLowerCase(java.util.Locale.ROOT))
    }

  class GuardedGetTables extends TCLIService.Processor.GetTables[TCLIService.Iface] {
    override def getResult(iface: TCLIService.Iface,
        args: TCLIService.GetTables_args): TCLIService.GetTables_result = {
      val result = super.getResult(iface, args)
      Option(result.getSuccess).foreach(r => filter(iface, r.getOperationHandle))
      result
    }
  }

  class GuardedGetColumns extends TCLIService.Processor.GetColumns[TCLIService.Iface] {
    override def getResult(iface: TCLIService.Iface,
        args: TCLIService.GetColumns_args): TCLIService.GetColumns_result = {
      val result = super.getResult(iface, args)
      Option(result.getSuccess).foreach(r => filter(iface, r.getOperationHandle))
      result
    }
  }
}
