"""The conformance cases (reference behaviour, the spec's conformance/cases.json, copied verbatim
into tests/fixtures/conformance_cases.json) as rows and policies.

Used by the oracle's own tests and by the SQL conformance tests, so both read the cases the
same way.
"""

import datetime
import json
from pathlib import Path

CASES_PATH = Path(__file__).resolve().parent / "fixtures" / "conformance_cases.json"
EPOCH = datetime.datetime(1970, 1, 1)
MARKER = "__window_marker__"


def runnable(case):
    """Tumbling cases whose input is only tuples and punctuation.

    Why the filter: the oracle has no checkpoint/reset and no wall clock ("clock"/"at" events);
    partition eviction is not modelled either, so those cases would pass or fail by accident.
    """
    window = case["window"]
    return (
        window["kind"] == "tumbling"
        and "partitionEviction" not in window
        and all(set(event) <= {"tuple", "punct"} for event in case["input"])
    )


def load_cases():
    return [case for case in json.loads(CASES_PATH.read_text()) if runnable(case)]


CASES = load_cases()


def case_rows_and_policy(case):
    """Translate a conformance case into oracle rows plus keyword arguments.

    "punct": "window" becomes a marker row for ("punct_expr",); "punct": "final" is dropped
    because Aggregate never flushes on it. A "name(timestamp)" attribute gets datetime values.
    """
    eviction = case["window"]["eviction"]
    attr, is_timestamp = eviction.get("attribute", ""), False
    if attr.endswith("(timestamp)"):
        attr, is_timestamp = attr[: -len("(timestamp)")], True
    rows = []
    for event in case["input"]:
        if "tuple" in event:
            row = dict(event["tuple"])
            if is_timestamp:
                row[attr] = EPOCH + datetime.timedelta(seconds=row[attr])
            rows.append(row)
        elif event["punct"] == "window":
            rows.append({MARKER: True})
    kwargs = {}
    if case["window"].get("partitioned"):
        key = case["window"]["partitionBy"]
        kwargs["partition_by"] = lambda row: row[key]
    kind = eviction["type"]
    if kind == "count":
        policy = ("count", eviction["size"])
    elif kind == "delta":
        policy = ("delta", attr, eviction["delta"])
    elif kind == "punct":
        policy = ("punct_expr",)
        kwargs["punct_of"] = lambda row: row.get(MARKER, False)
    else:
        raise AssertionError(f"unexpected policy in runnable case: {eviction}")
    return rows, policy, kwargs


# Sliding and partition-eviction cases (the sliding and eviction oracles and SQL tests).

AT = "__at"  # arrival timestamp column added to rows of cases with "at" events


def at_seconds(seconds):
    return EPOCH + datetime.timedelta(seconds=seconds)


def case_policy(spec):
    """A conformance policy dict as an oracle tuple; "name(timestamp)" attributes unsupported."""
    if spec["type"] == "count":
        return ("count", spec["size"])
    if spec["type"] == "time":
        return ("time", spec["seconds"])
    if spec["type"] == "delta" and not spec["attribute"].endswith(")"):
        return ("delta", spec["attribute"], spec["delta"])
    raise AssertionError(f"unexpected policy {spec}")


def case_partition_eviction(spec):
    kind = {"partitionCount": "count", "tupleCount": "tuples", "partitionAge": "age"}
    value = spec["age"] if spec["type"] == "partitionAge" else spec["count"]
    return (kind[spec["type"]], value)


def expressible(case):
    """Sliding and partition-eviction cases that a batch replay can express.

    Why the filter: "at" becomes an arrival timestamp and "clock" events vanish, which is
    exact for time EVICTION (evictions are only seen by later tuples). It is not for a time
    TRIGGER whose reference ticks run from window start rather than the first arrival, or
    that ticks after the last tuple; checkpoint/reset/punct inputs are not modelled here.
    """
    window = case["window"]
    if window["kind"] == "tumbling":
        eviction = window.get("partitionEviction")
        return eviction is not None and eviction.get("how", "LRU") == "LRU" \
            and all(set(event) == {"tuple"} for event in case["input"])
    if window["kind"] != "sliding" or "partitionEviction" in window:
        return False
    if not all(set(event) <= {"tuple", "at", "clock"} for event in case["input"]):
        return False
    if window["trigger"]["type"] == "time":
        times = [event.get("at", event.get("clock")) for event in case["input"]]
        tuple_times = [event["at"] for event in case["input"] if "tuple" in event]
        return min(tuple_times) == 0 and max(times) == max(tuple_times)
    return True


ALL_CASES = json.loads(CASES_PATH.read_text())
SLIDING = [c for c in ALL_CASES if c["window"]["kind"] == "sliding" and expressible(c)]
EVICTING = [c for c in ALL_CASES if c["window"]["kind"] == "tumbling" and expressible(c)]


def case_rows_and_kwargs(case):
    """Rows (tuple dicts, plus AT = EPOCH + at when timed) and oracle keyword arguments."""
    timed = any("at" in event for event in case["input"])
    rows = []
    for event in case["input"]:
        if "tuple" in event:
            row = dict(event["tuple"])
            if timed:
                row[AT] = at_seconds(event["at"])
            rows.append(row)
    window = case["window"]
    kwargs = {}
    if timed:
        kwargs["order_by"] = lambda row: row[AT]
    if window.get("partitioned"):
        kwargs["partition_by"] = lambda row, key=window["partitionBy"]: row[key]
    if "partitionEviction" in window:
        kwargs["partition_eviction"] = case_partition_eviction(window["partitionEviction"])
    return rows, kwargs


def expected_triggers(case, emit_incomplete):
    """(partition, window_id, ids) the SQL shows, per partition, from the reference events.

    Window ids count every trigger of the key; only non-empty triggers after the key's
    initialFull are shown unless emit_incomplete (semantics.md 7, sql.md 3).
    """
    full, counts, shown = set(), {}, {}
    for event in case["expected"]:
        key = event.get("partition")
        if event["event"] == "initialFull":
            full.add(key)
        elif event["event"] == "trigger":
            index = counts.get(key, 0)
            counts[key] = index + 1
            if event["tuples"] and (emit_incomplete or key in full):
                shown.setdefault(key, []).append((key, index, event["tuples"]))
    return shown
