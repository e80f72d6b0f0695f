"""The shared conformance cases (../shared/conformance/cases.json) as rows and policies.

Used by the oracle's own tests and by the SQL conformance tests, so both read the cases the
same way.
"""

import datetime
import json
from pathlib import Path

CASES_PATH = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "cases.json"
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
