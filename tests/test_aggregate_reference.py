"""The value helpers of tests/aggregate_reference.py, without Spark: what the value tests
(test_window_values.py) rely on must itself hold."""

import math
import os
from functools import reduce

import pytest
from aggregate_reference import (
    INT64_MAX,
    INT64_MIN,
    float32,
    mismatches,
    same_float,
    value_rows,
    wrap64,
)
from hypothesis import given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("SQL_EXT_ORACLE_EXAMPLES", "50"))
PURE = settings(max_examples=EXAMPLES, deadline=None,
                derandomize="SQL_EXT_ORACLE_EXAMPLES" not in os.environ)
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("expected, got, scale, same", [
    (NAN, NAN, 0, True), (NAN, 1.0, 0, False), (1.0, NAN, 0, False),
    (INF, INF, 0, True), (INF, -INF, 0, False), (INF, 1e308, 1e308, False),
    (-0.0, 0.0, 0, True), (None, None, 0, True), (None, 0.0, 0, False),
    (1.0, 1.0 + 1e-12, 0, True), (1.0, 1.001, 0, False),
    (0.0, 1e-7, 1000.0, True),  # a cancelled sum of large values: within 1e-9 of their size
    (0.0, 1e-5, 1000.0, False),
])
def test_same_float(expected, got, scale, same):
    """NaN == NaN, infinities exact, -0.0 == 0.0, NULL only equals NULL, 1e-9 relative."""
    assert same_float(expected, got, scale) is same


@PURE
@given(sign=st.sampled_from([1, -1]), n=st.integers(1, 30), data=st.data())
def test_one_sign_bigints_overflow_only_with_their_total(sign, n, data):
    """Under ansi=true the tests expect an error iff a window's exact total is outside BIGINT:
    that is only Spark's answer if no partial sum, in whatever order Spark adds, overflows
    first. With one sign per column every partial sum lies between 0 and the total."""
    values = [row["xl"] for row in data.draw(value_rows(n, bigint_sign=sign))
              if row["xl"] is not None]
    assert all(value * sign >= 0 for value in values)
    total = sum(values)
    order = data.draw(st.permutations(values))
    partials = [sum(order[:i]) for i in range(1, len(order) + 1)]
    if INT64_MIN <= total <= INT64_MAX:
        assert all(INT64_MIN <= p <= INT64_MAX for p in partials)


@PURE
@given(rows=st.integers(1, 30).flatmap(value_rows), data=st.data())
def test_wrapped_sums_do_not_depend_on_order(rows, data):
    """Under ansi=false SUM(BIGINT) wraps at each addition; the result is the exact sum
    wrapped once, whatever the order, so mixed signs compare exactly."""
    values = [row["xl"] for row in rows if row["xl"] is not None]
    order = data.draw(st.permutations(values))
    assert reduce(lambda a, b: wrap64(a + b), order, 0) == wrap64(sum(values))


@PURE
@given(rows=st.integers(1, 30).flatmap(value_rows))
def test_generated_values_fit_their_columns(rows):
    """FLOAT values are exact floats (what Spark stores is what the test compares), INT and
    BIGINT in range."""
    for row in rows:
        assert row["xf"] is None or math.isnan(row["xf"]) or float32(row["xf"]) == row["xf"]
        assert row["xi"] is None or -2 ** 31 <= row["xi"] < 2 ** 31
        assert row["xl"] is None or INT64_MIN <= row["xl"] <= INT64_MAX


def test_mismatches_use_the_window_for_tolerance():
    """A floating SUM may differ by 1e-9 of the window's sum of magnitudes, MIN not at all,
    and an integer must have the same value and type."""
    class Kind:
        def __init__(self, name):
            self.name = name

        def typeName(self):  # noqa: N802 (Spark's DataType method name)
            return self.name
    rows = [{"xd": 1e6}, {"xd": -1e6}, {"xd": 0.5}, {"xd": NAN}]
    types = {"sum_xd": Kind("double"), "min_xd": Kind("double"), "n": Kind("long")}
    assert mismatches({"sum_xd": 0.5, "min_xd": -1e6, "n": 4},
                      {"sum_xd": 0.5 + 1e-4, "min_xd": -1e6, "n": 4}, rows, types) == []
    assert [alias for alias, _ in mismatches(
        {"sum_xd": 0.5, "min_xd": -1e6, "n": 4},
        {"sum_xd": 0.5 + 1e-2, "min_xd": -1e6 + 1e-9, "n": 4.0}, rows, types)] == \
        ["sum_xd", "min_xd", "n"]
