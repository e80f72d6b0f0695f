"""The streaming tables this process runs (one registry that starting, stopping and SHOW
STREAMS share), and the small helpers both sides use."""

from __future__ import annotations

import datetime
import re
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


# Spark's error classes that only wrap another error (a micro-batch's failure, an error in the
# foreachBatch function that writes it): the error they wrap names the problem.
_WRAPPING_ERRORS = ("[STREAM_FAILED]", "[FOREACH_BATCH_USER_FUNCTION_ERROR]")
_ERROR_LINE = re.compile(r"^\s*[\w.$]+(Exception|Error): \[[A-Z][A-Z0-9_.]*\]")


def short_error(message: str, limit: int = 2000) -> str:
    """A stream failure carries the whole stack of every layer: keep its first line, the
    innermost cause and the innermost of Spark's own errors (`...Exception: [CLASS] ...`, as
    ARITHMETIC_OVERFLOW raised inside the micro-batch's Python function), which name the
    problem."""
    lines = message.splitlines()
    causes = [line for line in lines if line.lstrip().startswith("Caused by:")]
    errors = [line.strip() for line in lines[1:] if _ERROR_LINE.match(line)
              and not any(wrapper in line for wrapper in _WRAPPING_ERRORS)]
    kept = lines[:1] + causes[-1:]
    kept += [line for line in errors[-1:] if line not in "\n".join(kept)]
    text = "\n".join(kept)
    return text if len(text) <= limit else text[:limit] + " ..."
