package io.sqlext.access

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

import scala.util.control.NonFatal

import io.sqlext.Contract
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.{CatalogTableType, ExternalCatalogEvent,
  ExternalCatalogEventListener, ExternalCatalogWithListener}

/**
 * The folders that belong to the catalog: the warehouse, each database's folder, each table's
 * (managed or external, wherever it lies) and each streaming table's checkpoint. Their files
 * are reached through their tables only, by name, where the access rules apply: a path that
 * lies in one of them, or holds one, is refused to a user who is not an admin (`PathRule`).
 *
 * Read from the catalog when a statement names a path, and kept until the catalog changes
 * (`all`).
 */
object TableFolders {
  /** `folder` belongs to `owner` (as a refusal names it: "table sales.readings"); `table` is
   *  the table it is a folder of, if it is one. */
  final case class Owned(folder: Folder, owner: String, table: Option[(String, String)])

  /** Every folder of the catalog of `session`, tables' folders and checkpoints first. Kept
   *  between statements (a listing is one metastore call per database) until the catalog
   *  changes: every change this process makes to it (a table or database created, dropped,
   *  renamed or altered, a streaming table's checkpoint recorded) drops the list before the
   *  change, and the list is read again after `Fresh` at the latest, for the changes another
   *  process makes to a shared metastore. */
  def all(session: SparkSession): Seq[Owned] = {
    val catalog = session.sharedState.externalCatalog
    listen(catalog)
    val seen = generation.get
    cached.get match {
      case Some(Listed(of, at, owned, listedAt)) if (of eq catalog) &&
          listedAt == seen && System.nanoTime - at < Fresh.toNanos => owned
      case _ =>
        val owned = read(session)
        // Tagged with the generation it was read at: a change meanwhile makes it stale.
        cached.set(Some(Listed(catalog, System.nanoTime, owned, seen)))
        owned
    }
  }

  /** A listing of the catalog `of`, read at `at` (nanoseconds), at `generation`. */
  private final case class Listed(of: AnyRef, at: Long, owned: Seq[Owned], generation: Long)
  private val cached = new AtomicReference[Option[Listed]](None)
  private val generation = new AtomicLong()
  private val listened = java.util.Collections.newSetFromMap(
    new java.util.WeakHashMap[ExternalCatalogWithListener, java.lang.Boolean]())

  /** How long a listing stands for changes of another process to a shared metastore. */
  private val Fresh = java.time.Duration.ofSeconds(2)

  /** Every change to `catalog` (a SparkContext's; the events come before and after each
   *  change, on the thread that makes it) drops the listing. */
  private def listen(catalog: ExternalCatalogWithListener): Unit = listened.synchronized {
    if (listened.add(catalog)) {
      catalog.addListener(new ExternalCatalogEventListener {
        override def onEvent(event: ExternalCatalogEvent): Unit = {
          generation.incrementAndGet()
          cached.set(None)
        }
      })
    }
  }

  private def read(session: SparkSession): Seq[Owned] = {
    val conf = session.sessionState.newHadoopConf()
    val catalog = session.sharedState.externalCatalog
    val databases = catalog.listDatabases()
    val tables = databases.flatMap { db =>
      val entries = try catalog.getTablesByName(db, catalog.listTables(db)) catch {
        case NonFatal(_) => Nil  // the database was dropped meanwhile
      }
      entries.filter(_.tableType != CatalogTableType.VIEW).flatMap { entry =>
        val table = (db, entry.identifier.table)
        val name = s"$db.${entry.identifier.table}"
        entry.storage.locationUri.map(uri => Owned(Folder.ofUri(uri, conf), s"table $name",
          Some(table))).toSeq ++
          entry.properties.get(Contract.StreamCheckpointProperty)
            .flatMap(Folder.of(_, conf))
            .map(Owned(_, s"the checkpoint of streaming table $name", Some(table)))
      }
    }
    val folders = databases.flatMap { db =>
      try Some(Owned(Folder.ofUri(catalog.getDatabase(db).locationUri, conf),
        s"database $db", None))
      catch { case NonFatal(_) => None }
    }
    val warehouse = Folder.of(session.conf.get("spark.sql.warehouse.dir"), conf)
      .map(Owned(_, "the warehouse", None))
    // The default database's folder is the warehouse itself: named so.
    tables ++ folders.filterNot(f => warehouse.exists(_.folder == f.folder)) ++ warehouse
  }

  /** Why `folder` may not be named by a user: the folder of the catalog it lies in (the
   *  deepest), else one it holds; None where it is clear of them all. `own`: the table the
   *  statement defines, whose own folders it may name again. */
  def conflict(folder: Folder, owned: Seq[Owned], own: Option[(String, String)])
      : Option[String] = {
    val others = owned.filterNot(o => o.table.isDefined && o.table == own)
    val around = others.filter(_.folder.contains(folder)).sortBy(-_.folder.path.length)
    around.headOption.map { o =>
      if (o.table.isEmpty && o.owner == "the warehouse") {
        s"inside the warehouse (${o.folder}), whose folders belong to the catalog's tables"
      } else s"inside the folder of ${o.owner} (${o.folder})"
    }.orElse(others.find(o => folder.contains(o.folder)).map { o =>
      s"a folder that holds the folder of ${o.owner} (${o.folder})"
    })
  }
}
