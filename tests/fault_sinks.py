"""A test-only sink wrapper (`sql_ext.streaming.sink.wrap_sinks(fault_sinks.pausing)`) that
stops streams at chosen points of a micro-batch, so that a test can kill their process there
(stream_driver.py sets it when SQL_EXT_FAULTS is set).

SQL_EXT_FAULTS is JSON: {<a stream's table location>: {"pause": <file>, "batch": n, "stage":
"written" | "firings"}}. The first micro-batch of that stream to reach the stop point (from
batch n on, default 0) writes its id to <file> and waits there to be killed. "written" (the
default): after the batch's commits, before Spark commits its offsets; "firings": a stream with
LATE ROWS INTO after the commit of its firings, before that of its late rows. Streams it does
not name run as they are.
"""

from __future__ import annotations

import json
import os
import threading
import time


class _Fault:
    def __init__(self, pause: str, batch: int = 0, stage: str = "written"):
        self.pause, self.batch, self.stage = pause, batch, stage

    def armed(self, batch_id: int) -> bool:
        return not os.path.exists(self.pause) and batch_id >= self.batch

    def stop_here(self, batch_id: int) -> None:
        with open(self.pause, "w") as out:
            out.write(str(batch_id))
        time.sleep(3600)


# The driver's faults, by the real path of the table each is for: the environment is the
# process's, so it is read once.
FAULTS = {os.path.realpath(location): fault
          for location, fault in json.loads(os.environ.get("SQL_EXT_FAULTS", "{}")).items()}


def _fault_of(location: str | None) -> _Fault | None:
    if location is None:
        return None
    fault = FAULTS.get(os.path.realpath(location.removeprefix("file:")))
    return None if fault is None else _Fault(**fault)


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

    def fault(self) -> _Fault | None:
        """This stream's fault: known once its table's location is (a new table's is only
        when its first micro-batch writes)."""
        return _fault_of(self.table.location)

    def write(self, rows, batch_id: int, upsert: bool, count: int) -> None:
        fault = self.fault()
        armed = fault is not None and fault.armed(batch_id)
        self.table.write(rows, batch_id, upsert, count)
        self.batches.event(batch_id).set()
        if armed and (fault.stage == "firings" or self.late is None):
            fault.stop_here(batch_id)  # (with late rows and "written": the late rows' commit)


class PausingLateRows:
    def __init__(self, late, batches: _Batches, table: PausingTable):
        self.late, self.batches, self.table = late, batches, table

    def commit(self, spark, batch_id: int) -> None:
        fault = self.table.fault()
        if fault is None or not fault.armed(batch_id):
            self.late.commit(spark, batch_id)
        elif fault.stage == "firings":
            time.sleep(3600)  # never commits: the table's write stops the process
        else:
            self.late.commit(spark, batch_id)
            self.batches.event(batch_id).wait()  # both committed
            fault.stop_here(batch_id)


def pausing(table, late):
    batches = _Batches()
    pausing_table = PausingTable(table, late, batches)
    return (pausing_table,
            PausingLateRows(late, batches, pausing_table) if late is not None else None)
