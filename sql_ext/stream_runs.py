"""The streaming tables this process runs (one registry that starting, stopping and SHOW
STREAMS share), and the small helpers both sides use."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from sql_ext import stream_catalog as catalog
from sql_ext.errors import WindowSqlError
from sql_ext.names import table_name
from sql_ext.stream_catalog import Entry


@dataclass
class StreamingTable:
    """A streaming table this process has run."""

    entry: Entry
    query: StreamingQuery
    spark: SparkSession
    location: str
    rows_out: int = 0  # rows written into the table (firings after aggregation)
    dropped: tuple = (0, 0, 0)  # (late, no event time, out of order) when last logged


runs: dict[str, StreamingTable] = {}  # by Entry.key, the latest run of each table


def named_entry(spark: SparkSession, name: str, statement: str) -> Entry:
    db, table = catalog.identify(spark, table_name(name))
    props = catalog.read(spark, db, table)
    if not props:
        raise WindowSqlError(f"{statement} {name}: no streaming table of that name")
    return catalog.entry(db, table, props)


def running(key: str) -> StreamingTable | None:
    run = runs.get(key)
    return run if run is not None and run.query.isActive else None


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def short_error(message: str, limit: int = 2000) -> str:
    """A stream failure carries the whole stack of every layer: keep its first line and the
    innermost cause, which name the problem."""
    lines = message.splitlines()
    causes = [line for line in lines if line.lstrip().startswith("Caused by:")]
    text = "\n".join(lines[:1] + causes[-1:])
    return text if len(text) <= limit else text[:limit] + " ..."
