"""The runs of streaming tables in this process, as the one registry holds them: the JVM's
io.sqlext.streaming.catalog.RunningStreams, which also stops a stream whose table any session
drops and records a stream's failure. This module reads it, and serialises the statements that
start and stop the stream of one table (`managing`): several clients (JDBC connections,
threads) may CREATE, ALTER, REFRESH, STOP and DROP the same table at once.
"""

from __future__ import annotations

import datetime
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from sql_ext import jvm
from sql_ext.sql.contract import SHORT_ERROR_LIMIT
from sql_ext.sql.errors import StreamingTableError
from sql_ext.sql.names import table_name
from sql_ext.streaming import catalog
from sql_ext.streaming.catalog import Entry


@dataclass(frozen=True)
class StreamRun:
    """A run of a streaming table in this process (running or ended), read from the registry."""

    stream_id: str
    query: StreamingQuery
    location: str | None
    rows_out: int  # rows written into the table by this process's runs of the stream

    @property
    def active(self) -> bool:
        return self.query.isActive


def latest(spark: SparkSession, entry: Entry) -> StreamRun | None:
    """The latest run of `entry`'s stream in this process (not one of a table since dropped
    and created again under the same name)."""
    run = _latest_of_table(spark, entry)
    return run if run is not None and run.stream_id == entry.stream_id else None


def running(spark: SparkSession, entry: Entry) -> StreamRun | None:
    run = latest(spark, entry)
    return run if run is not None and run.active else None


def running_on_table(spark: SparkSession, entry: Entry) -> StreamRun | None:
    """The run of `entry`'s table while it is active, whichever stream of the table it runs."""
    run = _latest_of_table(spark, entry)
    return run if run is not None and run.active else None


def _latest_of_table(spark: SparkSession, entry: Entry) -> StreamRun | None:
    found = jvm.latest_run(spark, entry.db, entry.table)
    return None if found is None else StreamRun(**found)


_locks: dict[str, threading.RLock] = {}
_locks_lock = threading.Lock()


@contextmanager
def managing(key: str):
    """Holds the table `key` (Entry.key) for one statement that starts or stops its stream:
    the checks and the changes of one statement are not interleaved with another's on the
    same table. Re-entrant (ALTER falls back to CREATE)."""
    with _locks_lock:
        lock = _locks.setdefault(key, threading.RLock())
    with lock:
        yield


def named_entry(spark: SparkSession, name: str, statement: str) -> Entry:
    db, table = catalog.identify(spark, table_name(name))
    props = catalog.read(spark, db, table)
    if not props:
        raise StreamingTableError(f"{statement} {name}: no streaming table of that name")
    return catalog.entry(db, table, props, jvm.catalog_owner(spark, db, table))


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# Spark's error classes that only wrap another error (a micro-batch's failure, an error in the
# foreachBatch function that writes it): the error they wrap names the problem.
_WRAPPING_ERRORS = ("[STREAM_FAILED]", "[FOREACH_BATCH_USER_FUNCTION_ERROR]")
_ERROR_LINE = re.compile(r"^\s*[\w.$]+(Exception|Error): \[[A-Z][A-Z0-9_.]*\]")


def short_error(message: str, limit: int = SHORT_ERROR_LIMIT) -> str:
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
