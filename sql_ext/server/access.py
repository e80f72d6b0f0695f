"""Least privilege on a shared Thrift server: with sign-in on (--auth password), every signed-in
user who is not an admin (--admin USER, repeatable) is held to the access checks of the JVM
module (io.sqlext.access.AccessChecks): no call into the JVM or the operating system by name, no
jars, files or class-based functions, SET only of the settings of an allow-list, and no path
outside the server's folders (its warehouse, and each --allow-path DIR). With an access rules
file (--access-rules FILE: admins, and which user may do what with which tables), a user's
statements touch only the tables its rules give them. A server without
sign-in listens on loopback only and has one user, its operator, who is an admin.

    sql-ext thriftserver --auth password --password-file team.passwords --admin ops \\
        --allow-path /data/landing
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from sql_ext import jvm


def enforce(spark: SparkSession, admins: list[str], warehouse: str, allowed: list[str],
            rules: str | None = None) -> None:
    """Turns the checks on; paths may point into the warehouse (a path or a file: URI) and the
    `allowed` folders; tables are those the access rules file `rules` gives (io.sqlext.access.
    AccessRules; every table without one). An invalid rules file raises ValueError."""
    if warehouse.startswith("file:"):
        warehouse = unquote(urlparse(warehouse).path)
    roots = [str(Path(warehouse).resolve())] + [str(Path(p).resolve()) for p in allowed]
    jvm.enforce_access(spark, list(admins), roots, rules)
