"""Least privilege on a shared server: with sign-in on (--auth password, or Connect's --users),
every signed-in user who is not an admin (--admin USER, repeatable, or the rules file's) is held
to the access checks of the JVM module (io.sqlext.access.AccessChecks): no call into the JVM or
the operating system by name, no jars, files or class-based functions, SET only of the settings
of an allow-list, no path in a folder of the catalog (the warehouse, any table's folder or
checkpoint), files elsewhere only where a `locations` rule or --allow-path gives them, Kafka
servers only where a `servers` rule or --allow-server does, and with an access rules file
(--access-rules FILE) only the tables its rules give, through their row filters and column
masks. A server without sign-in listens on loopback only and has one user, its operator, who is
an admin.

    sql-ext thriftserver --auth password --password-file team.passwords --admin ops \\
        --allow-path /data/landing --access-rules team-rules.json
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from sql_ext import jvm


def enforce(spark: SparkSession, admins: list[str], allowed_paths: list[str],
            allowed_servers: list[str], rules: str | None = None) -> None:
    """Turns the checks on: every user may reach the files of the `allowed_paths` folders and
    the Kafka servers `allowed_servers` (host:port), besides what the access rules file `rules`
    gives (io.sqlext.access.AccessRules; every table without one). An invalid rules file raises
    ValueError."""
    paths = [str(Path(p).resolve()) if "://" not in p else p for p in allowed_paths]
    jvm.enforce_access(spark, list(admins), paths, list(allowed_servers), rules)
