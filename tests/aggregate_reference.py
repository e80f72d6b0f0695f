"""Values for windowed aggregates, and Spark's own aggregates as their reference.

Why this exists: the oracles (tests/oracle*.py) say which rows form each window; what the
aggregates of a window must be is what Spark's built-in MIN, MAX, SUM, AVG and COUNT give over
exactly those rows (architecture.md 5.7: "or a built-in aggregate"). This module holds the
three pieces every such test needs, shared so that tests agree on them:

  * Hypothesis strategies for rows whose value columns hold what breaks hand-written
    arithmetic: NaN, +-Infinity, -0.0, NULL, INT and BIGINT extremes (2^60, 2^62, 2^63 - 1,
    -2^63 + 1, 2^53 + 1, which a double cannot hold);
  * ``spark_reference``: one DataFrame of (window number, row values) grouped by window number
    with Spark's built-in functions, its values and result types;
  * ``mismatches``: the comparison (NaN equals NaN, infinities exact, -0.0 equals 0.0, finite
    floating sums and averages within 1e-9 of the window's sum of magnitudes, since the order
    of additions may differ; integers exact).

Python ints model BIGINT sums exactly (``exact_sums``, ``wrap64``) for the ANSI overflow rule:
under spark.sql.ansi.enabled=true SUM(BIGINT) raises ARITHMETIC_OVERFLOW, under false it wraps
around (two's complement, whatever the order of additions).
"""

import contextlib
import math
import struct

from hypothesis import strategies as st

__all__ = ["AGGREGATES", "INT64_MAX", "INT64_MIN", "ROW_DDL", "VALUE_COLUMNS", "ansi",
           "exact_sums", "float32", "mismatches", "overflowing", "spark_reference",
           "value_rows", "window_rows", "wrap64"]

INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
NAN, INF = float("nan"), float("inf")

# The value columns and their SQL types: one of each type Spark aggregates differently.
VALUE_COLUMNS = (("xd", "DOUBLE"), ("xf", "FLOAT"), ("xi", "INT"), ("xl", "BIGINT"))
# Every column of a generated row, in the order of the Delta sources and views built from them:
# id (unique, the arrival number), seq (ORDER BY), k (PARTITION BY, NULL included), d (the
# DELTA attribute, NULL included), m (PUNCT(m) markers), bits (2^id: SUM(bits) names the
# window's rows exactly), then the value columns.
ROW_DDL = ("id BIGINT, seq BIGINT, k STRING, d DOUBLE, m BOOLEAN, bits BIGINT, "
           + ", ".join(f"{name} {kind}" for name, kind in VALUE_COLUMNS))
MAX_ROWS = 60  # bits = 2^id stays a BIGINT, and the sum of a window's bits too


def _aggregates():
    """(alias, SQL) of every aggregate a test selects: the membership figures, then per value
    column Spark's MIN, MAX, SUM, AVG and COUNT. All of them have partials in the product
    (PartialAggregates), so SLIDING batch queries and streams take the incremental path."""
    out = [("n", "COUNT(*)"), ("id_lo", "MIN(id)"), ("id_hi", "MAX(id)"),
           ("id_bits", "SUM(bits)")]
    for column, _ in VALUE_COLUMNS:
        out += [(f"min_{column}", f"MIN({column})"), (f"max_{column}", f"MAX({column})"),
                (f"sum_{column}", f"SUM({column})"), (f"avg_{column}", f"AVG({column})"),
                (f"cnt_{column}", f"COUNT({column})")]
    return tuple(out)


AGGREGATES = _aggregates()


def float32(value):
    """The FLOAT nearest to ``value`` as a Python float (what a FLOAT column gives back)."""
    if value is None:
        return None
    return struct.unpack("f", struct.pack("f", value))[0]


def wrap64(value):
    """A Python int as a BIGINT wraps around: SUM(BIGINT) under ansi=false."""
    return (value - INT64_MIN) % 2 ** 64 + INT64_MIN


# Finite doubles: quarters up to 2^18 and +-2^40, so every sum of up to MAX_ROWS of them is
# exact in a double (49 significant bits); 0.1 and 1/3 are not, and need the tolerance.
_FINITE = st.one_of(st.integers(-2 ** 20, 2 ** 20).map(lambda n: n / 4),
                    st.sampled_from([2.0 ** 40, -2.0 ** 40, 0.1, -1 / 3, 1e-7]))
_SPECIAL_FLOATS = st.sampled_from([NAN, INF, -INF, -0.0, 0.0])
_SMALL_INTS = st.integers(-1000, 1000)
_INT32_EXTREMES = st.sampled_from([INT32_MAX, INT32_MIN, INT32_MAX - 1, -INT32_MAX])
# Magnitudes near the top of BIGINT; 2^53 + 1 and 2^63 - 2 are not doubles.
_INT64_MAGNITUDES = [2 ** 60, 2 ** 62, 3 * 2 ** 61, 2 ** 63 - 1, 2 ** 63 - 2, 2 ** 53 + 1]


def _int64_extremes(sign):
    """BIGINT extremes of one sign (+1, -1) or both (None, -2^63 included)."""
    if sign == 1:
        return st.sampled_from(_INT64_MAGNITUDES)
    if sign == -1:
        return st.sampled_from([-m for m in _INT64_MAGNITUDES] + [INT64_MIN + 1])
    return st.sampled_from(_INT64_MAGNITUDES + [-m for m in _INT64_MAGNITUDES]
                           + [INT64_MIN, INT64_MIN + 1])


@st.composite
def _column(draw, n, special, ordinary, dense):
    """n values: NULL, a special or an ordinary one, at a density drawn once per column (so
    some examples have plain columns and others mostly special values; ``dense``: 30% or
    60%, for tests that can afford few examples)."""
    percent = draw(st.sampled_from([30, 60] if dense else [0, 10, 30, 60]))
    values = []
    for _ in range(n):
        roll = draw(st.integers(0, 99))
        if roll < percent // 3:
            values.append(None)
        elif roll < percent:
            values.append(draw(special))
        else:
            values.append(draw(ordinary))
    return values


@st.composite
def value_rows(draw, n, bigint_sign=None, dense=False):
    """``n`` dicts with the value columns xd (DOUBLE), xf (FLOAT), xi (INT), xl (BIGINT).

    bigint_sign: None mixes signs in xl (wrap-around under ansi=false is order-independent);
    +1 or -1 keeps every xl of one sign, so a window's partial sums only overflow if its total
    does (what an ansi=true comparison needs: Spark's error is order-dependent otherwise).
    dense: special values in every column (see ``_column``).
    """
    small = _SMALL_INTS if bigint_sign is None else _SMALL_INTS.map(
        lambda v: abs(v) * bigint_sign)
    columns = {
        "xd": draw(_column(n, _SPECIAL_FLOATS, _FINITE, dense)),
        "xf": [float32(v) for v in draw(_column(n, _SPECIAL_FLOATS, _FINITE, dense))],
        "xi": draw(_column(n, _INT32_EXTREMES, _SMALL_INTS, dense)),
        "xl": draw(_column(n, _int64_extremes(bigint_sign), small, dense)),
    }
    return [{name: columns[name][i] for name in columns} for i in range(n)]


@st.composite
def window_rows(draw, max_rows=40, bigint_sign=None, min_rows=0, wild_delta=False,
                dense=False):
    """Rows of every column of ROW_DDL, in arrival order (id = seq = position).

    k: partition key (a, b or NULL); d: a DELTA attribute that mostly climbs by 0..3 and
    sometimes drops or is NULL; m: a PUNCT(m) marker about one row in six, sometimes NULL (a
    tuple, not a marker). wild_delta: d also takes +-Infinity and values near 2^53 and 10^15
    (NaN never: the spec gives it no DELTA meaning). dense: as in ``value_rows``.
    """
    n = draw(st.integers(min_rows, min(max_rows, MAX_ROWS)))
    values = draw(value_rows(n, bigint_sign, dense))
    level = draw(st.integers(-5, 5))
    wild = st.sampled_from([INF, -INF, 2.0 ** 53, 2.0 ** 53 + 2, 1e15, -1e15])
    rows = []
    for i in range(n):
        step = draw(st.sampled_from([0, 1, 1, 2, 3, -4, None]))
        level = level if step is None else level + step
        d = None if step is None else float(level)
        if wild_delta and d is not None and draw(st.integers(0, 7)) == 0:
            d = draw(wild)
        marker = draw(st.sampled_from([False] * 5 + [True, None]))
        rows.append(dict(values[i], id=i, seq=i, k=draw(st.sampled_from(["a", "b", None])),
                         d=d, m=marker, bits=2 ** i))
    return rows


@contextlib.contextmanager
def ansi(spark, enabled):
    """spark.sql.ansi.enabled set for the block, then restored (the session is shared)."""
    key = "spark.sql.ansi.enabled"
    old = spark.conf.get(key)
    spark.conf.set(key, "true" if enabled else "false")
    try:
        yield
    finally:
        spark.conf.set(key, old)


def exact_sums(groups, column):
    """Per group of rows, the exact (Python int) sum of ``column``'s non-NULL values, or None."""
    sums = []
    for rows in groups:
        values = [row[column] for row in rows if row[column] is not None]
        sums.append(sum(values) if values else None)
    return sums


def overflowing(groups, column="xl"):
    """Indexes of the groups whose exact sum of ``column`` is outside BIGINT."""
    return [i for i, total in enumerate(exact_sums(groups, column))
            if total is not None and not INT64_MIN <= total <= INT64_MAX]


def spark_reference(spark, groups, aggregates=AGGREGATES):
    """Spark's built-in aggregates over each group of rows (a window's content).

    One DataFrame of (gid, row values), ``SELECT gid, <aggregates> GROUP BY gid`` under
    ansi=false (a BIGINT sum wraps instead of failing the whole reference; callers decide what
    ansi=true expects, see ``overflowing``). Returns (values, types): a list with one dict
    alias -> value per group, in order, and a dict alias -> Spark DataType of the result.
    """
    columns = ["id", "bits"] + [name for name, _ in VALUE_COLUMNS]
    data = [(gid, *(row[c] for c in columns)) for gid, rows in enumerate(groups) for row in rows]
    schema = "gid INT, id BIGINT, bits BIGINT, " + ", ".join(
        f"{name} {kind}" for name, kind in VALUE_COLUMNS)
    select = ", ".join(f"{sql} AS {alias}" for alias, sql in aggregates)
    with ansi(spark, False):
        spark.createDataFrame(data, schema).createOrReplaceTempView("aggregate_reference")
        frame = spark.sql(f"SELECT gid, {select} FROM aggregate_reference GROUP BY gid")
        types = {field.name: field.dataType for field in frame.schema.fields}
        found = {row["gid"]: row.asDict() for row in frame.collect()}
    values = [found.get(gid) for gid in range(len(groups))]
    assert all(v is not None for v in values), "every group has rows"
    return values, {alias: types[alias] for alias, _ in aggregates}


def _magnitude(rows, column):
    """Sum of |x| over the finite non-NULL values: the error bound's scale for a sum."""
    return sum(abs(row[column]) for row in rows
               if row[column] is not None and not math.isinf(row[column])
               and not math.isnan(row[column]))


def same_float(expected, got, scale=0.0, rel=1e-9):
    """NaN == NaN, infinities exact, -0.0 == 0.0, finite values within rel * scale (or within
    rel of their own size): floating additions in another order round differently."""
    if expected is None or got is None:
        return expected is None and got is None
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    if math.isinf(expected) or math.isinf(got):
        return expected == got
    return abs(expected - got) <= rel * max(scale, abs(expected), abs(got))


def mismatches(expected, got, rows, types):
    """What differs between the reference's values of one window and the query's.

    expected, got: dicts alias -> value; rows: the window's rows (for tolerances); types: alias
    -> the reference's DataType. Integers (and COUNT) must be equal; MIN and MAX exact but for
    -0.0 == 0.0 and NaN == NaN; floating SUM and AVG within 1e-9 of the window's sum of
    magnitudes (for AVG divided by the count). Returns [(alias, "alias: expected x, got y")].
    """
    out = []
    for alias, kind in types.items():
        want, have = expected[alias], got.get(alias)
        if kind.typeName() in ("double", "float"):
            column = alias.split("_", 1)[1] if "_" in alias else None
            scale = 0.0
            if alias.startswith(("sum_", "avg_")):
                scale = _magnitude(rows, column)
                count = sum(row[column] is not None for row in rows)
                if alias.startswith("avg_") and count:
                    scale /= count
            rel = 1e-9 if alias.startswith(("sum_", "avg_")) else 0.0
            same = same_float(want, have, scale, rel)
        else:
            same = want == have and type(want) is type(have)
        if not same:
            out.append((alias, f"{alias}: expected {want!r}, got {have!r}"))
    return out
