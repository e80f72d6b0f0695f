"""Windowed aggregates equal Spark's own built-in aggregates over each window's rows, in batch
and in streaming tables, for values that break hand-written arithmetic.

Which rows form each window comes from the oracles (tests/window_cases.py calls oracle.py,
oracle_sliding.py, oracle_eviction.py); what MIN, MAX, SUM, AVG, COUNT(x) and COUNT(*) of those
rows are comes from Spark itself (tests/aggregate_reference.py): one DataFrame of (window
number, row values) grouped by window number. Neither shares code with the extension, and
streaming tables are judged against that expectation, not against the batch query (batch and
streaming share the window state machines, so a shared bug would pass).

Values: DOUBLE, FLOAT, INT and BIGINT columns with NaN, +-Infinity, -0.0, NULL and integer
extremes. Result types must be Spark's (MIN(FLOAT) is FLOAT, SUM(INT) is BIGINT, AVG is
DOUBLE). BIGINT sums: with mixed signs the examples run under ansi=false, where a sum wraps
around whatever the order; with one sign per column under ansi=true, where the query must fail
with ARITHMETIC_OVERFLOW exactly when some window's true sum is outside BIGINT.

Every example costs Spark queries (a streaming run costs seconds), so CI runs a few
derandomized examples per family, without shrinking, and reports every kind of difference it
saw (class Findings); SQL_EXT_VALUE_EXAMPLES=n runs n per test, SQL_EXT_VALUE_SHRINK=1 stops at
the first failing example and shrinks it.
"""

import itertools
import os
import re

import pytest
from aggregate_reference import (
    AGGREGATES,
    INT64_MAX,
    INT64_MIN,
    ROW_DDL,
    ansi,
    exact_sums,
    mismatches,
    overflowing,
    spark_reference,
)
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from window_cases import FAMILIES, case, sliding_window, tumbling_window

EXAMPLES = int(os.environ.get("SQL_EXT_VALUE_EXAMPLES", "0"))
SHRINK = bool(os.environ.get("SQL_EXT_VALUE_SHRINK"))
OVERFLOW = re.compile(r"ARITHMETIC_OVERFLOW|\boverflow\b", re.IGNORECASE)
# The aggregates but SUM(xl): when a window's sum is outside BIGINT, its ansi=true error hides
# the others, which Spark computes without error.
WITHOUT_BIGINT_SUM = tuple(a for a in AGGREGATES if a[0] != "sum_xl")
COLUMNS = [part.split()[0] for part in ROW_DDL.split(", ")]
_names = itertools.count()


def _settings(examples):
    return settings(max_examples=EXAMPLES or examples, deadline=None, derandomize=True,
                    phases=[Phase.explicit, Phase.generate] + ([Phase.shrink] if SHRINK else []),
                    print_blob=False,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


class Findings:
    """The problems of all examples of one test, by kind (an aggregate, a type, the overflow
    rule): each distinct difference is reported once with its first example, and how many
    examples showed it. Why not stop at the first failing example: one frequent difference (NaN)
    would hide the others. With SQL_EXT_VALUE_SHRINK it raises at once, so Hypothesis shrinks."""

    def __init__(self):
        self.examples = 0
        self.windows = 0  # windows the oracle formed, over all examples
        self.kinds = {}  # kind -> [examples showing it, report of the first]

    def add(self, problems, query, rows, windows):
        self.examples += 1
        self.windows += windows
        if not problems:
            return
        shown = ("id", "k", "d", "m", "xd", "xf", "xi", "xl")
        report = (f"{query}\n    " + "\n    ".join(line for _, line in problems[:20])
                  + (f"\n    ... {len(problems) - 20} more" if len(problems) > 20 else "")
                  + f"\n  rows {shown}:\n"
                  + "\n".join(f"    {tuple(row[c] for c in shown)}" for row in rows))
        if SHRINK:
            raise AssertionError(report)
        for kind in dict.fromkeys(kind for kind, _ in problems):
            self.kinds.setdefault(kind, [0, report])[0] += 1

    def verdict(self):
        summary = "\n\n".join(f"{kind}: {count} of {self.examples} examples, the first:\n  "
                              f"{report}" for kind, (count, report) in self.kinds.items())
        assert not self.kinds, f"{len(self.kinds)} kinds of difference\n\n{summary}"
        assert self.windows > 0, "no example formed a window: the test checked nothing"


def _expected(spark, window, rows):
    """The oracle's windows with Spark's aggregates of each, {key: (values, rows)}; Spark's
    result types; {key: exact sum} of the windows whose sum of xl is outside BIGINT."""
    firings = window.firings(rows)
    keys = [key for key, _ in firings]
    assert len(set(keys)) == len(keys), f"oracle window keys repeat: {keys}"
    groups = [members for _, members in firings]
    # With no window at all the types still come from Spark, over the first row.
    values, types = spark_reference(spark, groups or [rows[:1]])
    sums = exact_sums(groups, "xl")
    too_big = {keys[i]: sums[i] for i in overflowing(groups)}
    return {key: (values[i], groups[i]) for i, key in enumerate(keys)}, types, too_big


def _problems(expected, types, schema, got_rows, ids=False):
    """Every difference between the query's windows and the expectation: [(kind, line)]."""
    problems = []
    got_types = {f.name: f.dataType for f in schema.fields}
    for alias, kind in types.items():
        if alias in got_types and got_types[alias] != kind:
            problems.append((f"type of {alias}", f"type of {alias}: Spark's is "
                             f"{kind.simpleString()}, the query's "
                             f"{got_types[alias].simpleString()}"))
    got = {}
    for row in got_rows:
        values = row.asDict()
        got.setdefault((values.pop("p", None), values.pop("w"), values.pop("e")), []) \
            .append(values)
    for key in sorted(set(got) | set(expected), key=repr):
        if key not in expected:
            problems.append(("window not in the oracle", f"window {key}: not in the oracle, "
                             f"got {got[key]}"))
        elif key not in got:
            problems.append(("window missing", f"window {key}: missing, its rows "
                             f"{_ids(expected[key][1])}"))
        elif len(got[key]) > 1:
            problems.append(("window repeated", f"window {key}: {len(got[key])} rows"))
        else:
            (values,), (reference, members) = got[key], expected[key]
            shown = {alias: t for alias, t in types.items() if alias in values}
            for alias, line in mismatches(reference, values, members, shown):
                problems.append((alias, f"window {key} rows {_ids(members)}: {line}"))
            if ids and list(values["ids"]) != sorted(_ids(members)):
                problems.append(("ids", f"window {key}: ids {values['ids']}, oracle "
                                 f"{sorted(_ids(members))}"))
    return problems


def _ids(rows):
    return [row["id"] for row in rows]


def _attempt(run):
    """run()'s result and the exception it raised: (result, None) or (None, error)."""
    try:
        return run(), None
    except Exception as error:  # noqa: BLE001 (judged by _overflow_rule)
        return None, error


def _overflow_rule(error, ansi_on, too_big):
    """Judges a run by the ANSI rule: under ansi=true it fails with ARITHMETIC_OVERFLOW iff some
    window's exact sum of xl is outside BIGINT. Returns (failed with an overflow, problems);
    any other error is raised (not an arithmetic difference: a test or product crash)."""
    if error is not None and not OVERFLOW.search(str(error)):
        raise error
    expected = ansi_on and bool(too_big)
    if expected and error is None:
        shown = ", ".join(f"{key}: {total}" for key, total in too_big.items())
        return False, [("no ARITHMETIC_OVERFLOW", "no ARITHMETIC_OVERFLOW under ansi=true, "
                        f"but these windows' sums of xl are outside BIGINT: {shown}")]
    if error is not None and not expected:
        return True, [("unexpected ARITHMETIC_OVERFLOW",
                       f"ARITHMETIC_OVERFLOW (ansi={ansi_on}), but no window's sum of xl is "
                       f"outside BIGINT ({INT64_MIN}..{INT64_MAX}): {str(error)[:300]}")]
    return error is not None, []


def _frame(spark, rows):
    return spark.createDataFrame([tuple(row[c] for c in COLUMNS) for row in rows], ROW_DDL)


def check_batch(spark, findings, window, ansi_on, rows, scan_order):
    """spark.sql of the windowed query over a view of ``scan_order`` (ORDER BY seq restores the
    arrival order). SLIDING runs it twice: aggregates only (the operator aggregates
    incrementally) and with COLLECT_LIST(id) (the copying plan; ids checked too); TUMBLING
    always copies, so once, with the ids."""
    expected, types, too_big = _expected(spark, window, rows)
    _frame(spark, scan_order).coalesce(1).createOrReplaceTempView("values_input")
    plans = [("copying", ", ARRAY_SORT(COLLECT_LIST(id)) AS ids")]
    if window.policy.startswith("SLIDING"):
        plans.insert(0, ("aggregates only", ""))
    problems = []
    for plan, extra in plans:
        with ansi(spark, ansi_on):
            frame = spark.sql(window.query("values_input", extra=extra))
            got, error = _attempt(frame.collect)
            failed, found = _overflow_rule(error, ansi_on, too_big)
            if failed:  # Spark computes the other aggregates without error
                frame = spark.sql(window.query("values_input", WITHOUT_BIGINT_SUM, extra))
                got, error = _attempt(frame.collect)
                found += _overflow_rule(error, ansi_on, {})[1]
        if got is not None:
            found += _problems(expected, types, frame.schema, got, bool(extra))
        problems += [(f"[{plan}] {kind}", f"[{plan}] {line}") for kind, line in found]
    findings.add(problems, f"ansi={ansi_on}: {window.query('t')}", rows, len(expected))


def _stream(spark, tmp_path_factory, window, appends, runs, max_files):
    """CREATE STREAMING TABLE ... TRIGGER AVAILABLE NOW over a Delta source fed in appends, then
    REFRESH STREAMING TABLE after later appends. Returns the sink's name."""
    n = next(_names)
    source, view, sink = f"values_src_{n}", f"values_view_{n}", f"values_out_{n}"
    checkpoint = tmp_path_factory.mktemp("values_checkpoint")
    spark.sql(f"CREATE TABLE {source} ({ROW_DDL}) USING DELTA")
    written = 0
    for run in runs:
        for rows in appends[written:run]:
            _frame(spark, rows).coalesce(1).write.format("delta").mode("append") \
                .saveAsTable(source)
        written = run
        reader = spark.readStream.format("delta")
        if max_files:
            reader = reader.option("maxFilesPerTrigger", max_files)
        reader.table(source).createOrReplaceTempView(view)
        if written == runs[0]:
            spark.sql(f"CREATE STREAMING TABLE {sink} CHECKPOINT '{checkpoint}' "
                      f"TRIGGER AVAILABLE NOW AS {window.query(f'STREAM({view})')}")
        else:
            spark.sql(f"REFRESH STREAMING TABLE {sink}")
    return sink


def check_stream(spark, tmp_path_factory, findings, window, ansi_on, rows, cut):
    """The streaming table of the query, its rows appended as ``cut`` = (appends, runs: the
    appends after which a run ends, maxFilesPerTrigger), against the oracle and Spark."""
    appends, runs, max_files = cut
    expected, types, too_big = _expected(spark, window, rows)
    with ansi(spark, ansi_on):
        sink, error = _attempt(lambda: _stream(spark, tmp_path_factory, window, appends, runs,
                                               max_files))
    failed, problems = _overflow_rule(error, ansi_on, too_big)
    if not failed:
        frame = spark.table(sink)
        problems += _problems(expected, types, frame.schema, frame.collect())
    findings.add(problems, f"ansi={ansi_on}, runs after appends {runs} of {len(appends)} "
                 f"(sizes {[len(a) for a in appends]}), maxFilesPerTrigger={max_files}: "
                 f"{window.query('STREAM(src)')}", rows, len(expected))


@st.composite
def cuts(draw, rows):
    """The rows cut into appends (shuffled within each: ORDER BY seq restores them), the
    appends after which a run (CREATE, then REFRESH) ends, and maxFilesPerTrigger (1: a
    micro-batch per append inside one run; None: one micro-batch per run)."""
    points = sorted(set(draw(st.lists(st.integers(1, max(1, len(rows) - 1)), max_size=4))))
    bounds = [0] + [p for p in points if p < len(rows)] + [len(rows)]
    appends = [draw(st.permutations(rows[a:b])) for a, b in zip(bounds, bounds[1:])]
    runs = sorted({draw(st.integers(1, len(appends)))} | {len(appends)})
    return appends, runs, draw(st.sampled_from([None, 1]))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_batch_windows_equal_spark_builtins(spark, family):
    """Five random windows of the family over up to 40 rows each, ansi drawn."""
    findings = Findings()

    @_settings(5)
    @given(example=case(FAMILIES[family]), data=st.data())
    def check(example, data):
        window, ansi_on, rows = example
        check_batch(spark, findings, window, ansi_on, rows, data.draw(st.permutations(rows)))

    check()
    findings.verdict()


# Streaming runs cost seconds each: one example per family, ansi alternating.
STREAM_CASES = [(family, i % 2 == 1) for i, family in enumerate(FAMILIES)]


@pytest.mark.parametrize("family, ansi_on", STREAM_CASES,
                         ids=[f"{f}-ansi-{'on' if a else 'off'}" for f, a in STREAM_CASES])
def test_streaming_tables_equal_spark_builtins(spark, tmp_path_factory, family, ansi_on):
    """One random window of the family over up to 30 rows, its columns dense with special
    values, appended in random cuts."""
    findings = Findings()

    @_settings(1)
    @given(example=case(FAMILIES[family], 30, ansi_on, dense=True), data=st.data())
    def check(example, data):
        window, _, rows = example
        # One example a case (a stream costs seconds): one that forms windows.
        assume(window.firings(rows))
        check_stream(spark, tmp_path_factory, findings, window, ansi_on, rows,
                     data.draw(cuts(rows)))

    check()
    findings.verdict()


def _minimal_rows():
    """Three rows: a NaN after a number (MIN must skip it: Spark orders NaN above every
    number), and two BIGINTs 2^62 whose sum 2^63 is just outside BIGINT (AVG must not wrap:
    Spark's AVG(BIGINT) adds doubles; SUM fails under ansi=true, wraps under ansi=false)."""
    values = [(1.0, 2 ** 31 - 1, 2 ** 62), (float("nan"), 2 ** 31 - 1, 2 ** 62), (2.0, 1, 1)]
    return [dict(id=i, seq=i, k="a", d=float(i), m=False, bits=2 ** i, xd=xd, xf=xd, xi=xi,
                 xl=xl) for i, (xd, xi, xl) in enumerate(values)]


@pytest.mark.parametrize("ansi_on", [False, True], ids=["ansi-off", "ansi-on"])
def test_minimal_windows_in_batch(spark, ansi_on):
    """SLIDING COUNT(2) TRIGGER COUNT(1) (the incremental plan) and TUMBLING COUNT(2) over
    _minimal_rows: the smallest inputs of the arithmetic rules above, whatever the draws."""
    findings = Findings()
    rows = _minimal_rows()
    for window in (sliding_window(("COUNT(2)", ("count", 2)), ("COUNT(1)", ("count", 1)), False),
                   tumbling_window("COUNT(2)", ("count", 2), False)):
        check_batch(spark, findings, window, ansi_on, rows, rows)
    findings.verdict()


@pytest.mark.parametrize("ansi_on", [False, True], ids=["ansi-off", "ansi-on"])
def test_minimal_windows_in_a_streaming_table(spark, tmp_path_factory, ansi_on):
    """The streaming table of TUMBLING COUNT(2) (partial aggregates) over _minimal_rows, in one
    append and one run."""
    findings = Findings()
    rows = _minimal_rows()
    check_stream(spark, tmp_path_factory, findings, tumbling_window(
        "COUNT(2)", ("count", 2), False), ansi_on, rows, ([rows], [1], None))
    findings.verdict()
