"""What Python and the JVM extension must spell alike, defined once in contract.json beside
this module; the JVM reads the copy the build puts in its jar (io.sqlext.Contract), and
tests/test_contract.py fails when the two differ or when either side stops using them.

- input columns: the helper columns the lowering adds to a window's input, read by the JVM
  operator (ORDER BY value, arrival number, DELTA attributes, event time, watermark, ...);
- numbered names: partition key i (`__sx_p<i>`), from streaming partials aggregate i
  (`__sx_a<i>`), and the i-th positional parameter `?` of a rewritten statement (`:__sx_pos<i>`);
- the group column (`__sx_fire`): what the aggregation groups a window's rows by, within a
  partition: a firing's number for TUMBLING and SLIDING, a pane's number for TIME_INTERVAL
  (whose firings of one pane are told apart by PANE_INDEX());
- pane-function columns: the operator's output for WINDOW_ID(), PANE_START(), ...;
- SHOW STREAMS' columns, and the longest error a catalog entry keeps;
- the catalog property of a streaming table's checkpoint.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_CONTRACT = json.loads(Path(__file__).with_name("contract.json").read_text())

HELPER_PREFIX: str = _CONTRACT["helper_prefix"]
INPUT_COLUMNS: dict[str, str] = _CONTRACT["input_columns"]
ORDER_COLUMN = INPUT_COLUMNS["order"]
ARRIVAL_COLUMN = INPUT_COLUMNS["arrival"]
DELTA_COLUMN = INPUT_COLUMNS["delta"]
TRIGGER_DELTA_COLUMN = INPUT_COLUMNS["trigger_delta"]
EVENT_TIME_COLUMN = INPUT_COLUMNS["event_time"]
WATERMARK_COLUMN = INPUT_COLUMNS["watermark"]
PUNCT_COLUMN = INPUT_COLUMNS["punct"]
FILE_COLUMN = INPUT_COLUMNS["file"]
CLOCK_START_COLUMN = INPUT_COLUMNS["clock_start"]
CLOCK_END_COLUMN = INPUT_COLUMNS["clock_end"]
GROUP_COLUMN: str = _CONTRACT["group_column"]
# The window's firings in a lowered query (a pipeline's window query reads them so).
SOURCE_ALIAS: str = _CONTRACT["source_alias"]
# A window's source (FROM and JOINs) in a pipeline's window query (sql_ext.sql.pipeline).
TUPLES_ALIAS: str = _CONTRACT["tuples_alias"]
# A Python UDAF's batched form (over a batch of windows) is registered under this prefix.
UDAF_BATCHED_PREFIX: str = _CONTRACT["udaf_batched_prefix"]
# Pane function (lower case, as the spec's "meta" lists it) -> its output column.
PANE_FUNCTION_COLUMNS: dict[str, str] = _CONTRACT["pane_function_columns"]

_NUMBERED: dict[str, str] = _CONTRACT["numbered_columns"]

# SHOW STREAMS, in order.
STREAM_COLUMNS: tuple[str, ...] = tuple(_CONTRACT["show_streams_columns"])
# A stream's failure as SHOW STREAMS and the catalog keep it: at most this many characters.
SHORT_ERROR_LIMIT: int = _CONTRACT["short_error_limit"]
# The catalog property that holds a streaming table's checkpoint (the JVM's access checks read
# it: the folder is the table's).
STREAM_CHECKPOINT_PROPERTY: str = _CONTRACT["stream_checkpoint_property"]

# Python's own helper names, never read by the JVM: the inputs of streaming aggregates
# (`__sx_in<i>`).
AGGREGATE_INPUT_PREFIX = HELPER_PREFIX + "in"


def partition_column(i: int) -> str:
    return f"{_NUMBERED['partition']}{i}"


def aggregate_column(i: int) -> str:
    return f"{_NUMBERED['aggregate']}{i}"


def aggregate_input_column(i: int) -> str:
    return f"{AGGREGATE_INPUT_PREFIX}{i}"


def positional_parameter(i: int) -> str:
    """The name a rewritten statement gives its i-th `?` (the JVM binds it to the i-th value)."""
    return f"{_NUMBERED['positional_parameter']}{i}"


def is_partition_column(name: str) -> bool:
    return re.fullmatch(re.escape(_NUMBERED["partition"]) + r"\d+", name) is not None


def is_helper(name: str) -> bool:
    return name.startswith(HELPER_PREFIX)


def as_json() -> dict:
    """The contract as both sides read it (for the test that compares them)."""
    return {k: v for k, v in _CONTRACT.items() if k != "about"}
