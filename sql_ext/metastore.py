"""The persistent catalog: Spark's Hive metastore support, so tables, views and databases
outlive the process that created them.

Embedded default: a Derby database in `<warehouse>/metastore_db` (Derby's log beside it), not
in the working directory. Derby admits one process at a time; a second process on the same
warehouse gets CatalogInUse. Outgrowing it, point the session at an external metastore:

    sql_ext.session(metastore="jdbc:postgresql://db:5432/metastore")   # a database by JDBC URL
    sql_ext.session(metastore="thrift://metastore-host:9083")          # a Hive metastore service

(or SQL_EXT_METASTORE=<url>; a JDBC URL also needs its driver jar and driver class as
spark.hadoop.* settings, and its user and password in SQL_EXT_METASTORE_USER and
SQL_EXT_METASTORE_PASSWORD or as spark.hadoop.javax.jdo.option.* settings).
"""

from __future__ import annotations

import logging
import os
import shlex
import time
from pathlib import Path

from sql_ext.sql.errors import WindowSqlError

METASTORE_ENV = "SQL_EXT_METASTORE"
# An external JDBC metastore's user and password (Hive's javax.jdo.option settings).
CREDENTIALS_ENV = {"SQL_EXT_METASTORE_USER": "ConnectionUserName",
                   "SQL_EXT_METASTORE_PASSWORD": "ConnectionPassword"}

log = logging.getLogger("sql_ext")


class CatalogInUse(WindowSqlError):
    """The embedded catalog of a warehouse is open in another process."""
    condition = "SQL_EXT_CATALOG_IN_USE"


def derby_url(warehouse: Path) -> str:
    return f"jdbc:derby:;databaseName={warehouse / 'metastore_db'};create=true"


def set_aside_unfinished(warehouse: Path) -> Path | None:
    """A process killed while Derby created the embedded catalog leaves `metastore_db` without
    Derby's `service.properties`; Derby then refuses to create it again ("Directory ... already
    exists") for every later process. No table can be in such a database (its creation never
    finished), so it is moved aside, with a warning, and created anew. Returns where it went."""
    database = warehouse / "metastore_db"
    if not database.is_dir() or (database / "service.properties").exists():
        return None
    aside = warehouse / f"metastore_db.unfinished-{time.strftime('%Y%m%d-%H%M%S')}"
    database.rename(aside)
    log.warning("sql_ext: the embedded catalog %s was never completely created (a process "
                "stopped while creating it); moved aside to %s and created anew", database,
                aside)
    return aside


def catalog_conf(warehouse: Path, metastore: str | None = None) -> dict[str, str]:
    """Spark settings of the catalog: the embedded Derby metastore under `warehouse`, or the
    external `metastore` (a JDBC URL or thrift:// URIs)."""
    metastore = metastore or os.environ.get(METASTORE_ENV) or None
    conf = {"spark.sql.catalogImplementation": "hive"}
    if metastore is None:
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = derby_url(warehouse)
    elif metastore.startswith("thrift://"):
        conf["spark.hadoop.hive.metastore.uris"] = metastore
    elif metastore.startswith("jdbc:"):
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = metastore
        # Credentials from the environment, never from a command line (the password's setting
        # stays off the driver's: sql_ext.jvm.start_driver).
        for variable, key in CREDENTIALS_ENV.items():
            if os.environ.get(variable):
                conf[f"spark.hadoop.javax.jdo.option.{key}"] = os.environ[variable]
    else:
        raise WindowSqlError(f"metastore {metastore!r}: expected a JDBC URL (jdbc:...) or a "
                             "Hive metastore service (thrift://host:port)")
    # A metastore that cannot be opened fails at once: the Hive client would otherwise retry
    # ten times two seconds apart, per call.
    conf["spark.hadoop.hive.hmshandler.retry.attempts"] = "1"
    conf["spark.hadoop.hive.metastore.connect.retries"] = "1"
    return conf


# Log lines of the metastore that report no error, dropped in the embedded default (logger ->
# Java regex of the whole message). CREATE OR REPLACE TABLE of an existing Delta table (the
# seed examples, dbt's table models) has Spark store the new schema "in a Hive compatible way"
# first; the metastore refuses (the table's Hive columns are Spark's placeholder for a Delta
# table, `col array<string>`, which it will not change to other types), its HiveAlterHandler
# logs "ERROR ... Failed to alter table db.t" without a cause, and Spark stores the schema in
# its own format, as it does for every Delta table (its WARN says so, with the cause). An
# alteration that really fails still fails its statement with the metastore's exception, and
# HiveAlterHandler's other errors (a failed restore of moved data) stay.
BENIGN_LOG_LINES = {"org.apache.hadoop.hive.metastore.HiveAlterHandler":
                    r"Failed to alter table .+"}


def java_options(warehouse: Path) -> str:
    """Derby's log in the warehouse, not in the working directory. Not derby.system.home: the
    Thrift server opens a Derby `memory:` database per session, which fails and retries for
    about 20 s at every session close when derby.system.home is set. Quoted as a shell word:
    Spark splits java option strings at spaces and reads shell quotes, and a warehouse's path
    may have spaces or quotes."""
    return shlex.quote(f"-Dderby.stream.error.file={warehouse / 'derby.log'}")


def check_open(spark, warehouse: Path) -> None:
    """Opens the catalog now, so a warehouse whose embedded catalog another process holds is a
    clear error at session start, not a failure at some later statement."""
    embedded = spark.conf.get("spark.hadoop.javax.jdo.option.ConnectionURL", "") \
        .startswith("jdbc:derby:")
    try:
        spark.catalog.listDatabases()
    except Exception as error:  # noqa: BLE001 - py4j wraps the Hive client's exceptions
        text = str(error)
        # Only Derby's lock means "another process": an external metastore's failure is its own.
        if embedded and ("XSDB6" in text or "Another instance of Derby" in text
                or "Unable to instantiate" in text or "Failed to start database" in text):
            raise CatalogInUse(
                f"the catalog of warehouse {warehouse} ({warehouse / 'metastore_db'}) is open "
                "in another process: Derby, the embedded metastore, admits one. Stop that "
                "process (a Thrift server, another session), use another warehouse, or share "
                f"an external metastore ({METASTORE_ENV}=jdbc:... or thrift://...; see "
                "docs/guide/catalog.md)") from None
        raise
