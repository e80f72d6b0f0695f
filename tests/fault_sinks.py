"""A test-only sink wrapper (spark.sql_ext.streaming.sinkWrapper = "fault_sinks:pausing") that
stops a stream at a chosen point of a micro-batch, so that a test can kill its process there
(stream_driver.py sets it when SQL_EXT_FAULT_PAUSE is set):

- SQL_EXT_FAULT_PAUSE=<file>: the first micro-batch that reaches the stop point (from batch
  SQL_EXT_FAULT_BATCH on, default 0) writes its id to <file> and waits there to be killed;
- SQL_EXT_FAULT_STAGE=written (default): after the batch's commits, before Spark commits its
  offsets; =firings: a stream with LATE ROWS INTO after the commit of its firings, before
  that of its late rows.
"""

from __future__ import annotations

import os
import threading
import time


def _armed(batch_id: int) -> bool:
    marker = os.environ.get("SQL_EXT_FAULT_PAUSE")
    return bool(marker) and not os.path.exists(marker) \
        and batch_id >= int(os.environ.get("SQL_EXT_FAULT_BATCH", "0"))


def _stage() -> str:
    return os.environ.get("SQL_EXT_FAULT_STAGE", "written")


def _pause(batch_id: int) -> None:
    with open(os.environ["SQL_EXT_FAULT_PAUSE"], "w") as out:
        out.write(str(batch_id))
    time.sleep(3600)


class _Batches:
    """Which micro-batches' table writes are done (a late-rows commit may run beside one)."""

    def __init__(self):
        self.done: dict[int, threading.Event] = {}
        self.lock = threading.Lock()

    def event(self, batch_id: int) -> threading.Event:
        with self.lock:
            return self.done.setdefault(batch_id, threading.Event())


class PausingTable:
    def __init__(self, table, late, batches: _Batches):
        self.table, self.late, self.batches = table, late, batches

    def write(self, rows, batch_id: int, upsert: bool, count: int) -> None:
        armed = _armed(batch_id)
        self.table.write(rows, batch_id, upsert, count)
        self.batches.event(batch_id).set()
        if armed and (_stage() == "firings" or self.late is None):
            _pause(batch_id)  # (with late rows and "written": the late rows' commit stops)


class PausingLateRows:
    def __init__(self, late, batches: _Batches):
        self.late, self.batches = late, batches

    def commit(self, spark, batch_id: int) -> None:
        if not _armed(batch_id):
            self.late.commit(spark, batch_id)
        elif _stage() == "firings":
            time.sleep(3600)  # never commits: the table's write stops the process
        else:
            self.late.commit(spark, batch_id)
            self.batches.event(batch_id).wait()  # both committed
            _pause(batch_id)


def pausing(table, late):
    batches = _Batches()
    return (PausingTable(table, late, batches),
            PausingLateRows(late, batches) if late is not None else None)
