"""Property tests of the oracles themselves (no Spark): each window family against a second,
closed-form statement of its rule, on rows whose value columns hold NaN, +-Infinity, -0.0,
NULL and INT/BIGINT extremes (tests/aggregate_reference.py), and DELTA attributes with
+-Infinity, NULL and values near 2^53.

Why: every Spark test trusts the oracles (tests/oracle*.py) for which rows form a window; the
value tests (test_window_values.py) add Spark's built-in aggregates of those rows. Here the
membership rules are restated per family in another shape (by index: "the last n tuples of
the key", "the rows between two markers", "bucket floor((t - t0) / T)"), so a slip in an
oracle's loop shows up as a disagreement, and no value in a payload column can change which
rows form a window.

CI runs 50 derandomized examples per family in a few seconds; SQL_EXT_ORACLE_EXAMPLES=n runs
n random ones.
"""

import datetime
import math
import os
from fractions import Fraction

import pytest
from aggregate_reference import window_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import tumbling_firings_with_dropped
from oracle_eviction import tumbling_eviction_result
from oracle_panes import pane_firings
from oracle_sliding import sliding_result

EXAMPLES = int(os.environ.get("SQL_EXT_ORACLE_EXAMPLES", "50"))
PURE = settings(max_examples=EXAMPLES, deadline=None,
                derandomize="SQL_EXT_ORACLE_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
T0 = datetime.datetime(2020, 1, 1)


@st.composite
def scanned(draw, max_rows=24):
    """Window rows (ids in arrival order) in a shuffled scan order, with ties in seq (seq = id
    div 2: ORDER BY seq keeps scan order among ties) and a clock ts (whole seconds from T0,
    non-decreasing in id, some NULL)."""
    rows = draw(window_rows(max_rows, wild_delta=True))
    second = 0
    for row in rows:
        second += draw(st.sampled_from([0, 1, 1, 2, 5]))
        row.update(seq=row["id"] // 2,
                   ts=None if draw(st.integers(0, 9)) == 0 else T0 + datetime.timedelta(
                       seconds=second))
    return draw(st.permutations(rows))


def _arrival(rows, by="seq"):
    """Stable sort by ``by`` (no NULLs here but ts, which callers filter first)."""
    return sorted(rows, key=lambda row: row[by])


def _key(partitioned):
    return (lambda row: row["k"]) if partitioned else (lambda row: None)


def _null_first(key):
    return (key is not None, key or "")


def _exceeds(new, old, d):
    """DELTA's tumble/evict test (semantics.md 2.2, 3.2): new - old > d, never when new < old.
    Written as one comparison chain so that an infinity minus itself (NaN) never exceeds."""
    return new >= old and new - old > d


def _shape(firings):
    return [(f["partition"], f["window_id"], [r["id"] for r in f["rows"]]) for f in firings]


def _oracle_tumbling(rows, policy, partitioned, **kwargs):
    firings, dropped = tumbling_firings_with_dropped(
        rows, policy, partition_by=_key(partitioned) if partitioned else None,
        order_by=kwargs.pop("order_by", lambda r: r["seq"]), **kwargs)
    return _shape(firings), dropped


@PURE
@given(rows=scanned(), n=st.integers(1, 6), partitioned=st.booleans())
def test_tumbling_count_is_the_keys_full_chunks(rows, n, partitioned):
    """COUNT(n): a key's tuples in arrival order, cut into chunks of n; each full chunk fires
    when its last tuple arrives, with the key's chunk number as its id."""
    arrival = _arrival(rows)
    position = {row["id"]: i for i, row in enumerate(arrival)}
    per_key = {}
    for row in arrival:
        per_key.setdefault(_key(partitioned)(row), []).append(row)
    chunks = [(position[rs[c * n + n - 1]["id"]], key, c, [r["id"] for r in rs[c * n:c * n + n]])
              for key, rs in per_key.items() for c in range(len(rs) // n)]
    assert _oracle_tumbling(rows, ("count", n), partitioned) == \
        ([chunk[1:] for chunk in sorted(chunks)], 0)


@PURE
@given(rows=scanned(), d=st.sampled_from([0, 1.5, 4, 1e15]), partitioned=st.booleans())
def test_tumbling_delta_windows_never_hold_a_tumbling_tuple(rows, d, partitioned):
    """DELTA(d, δ): a key's fired windows are consecutive runs of its non-NULL tuples; no tuple
    of a window exceeds the window's first by more than δ, the tuple after a fired window
    does, and what is left after the last firing holds no such tuple either."""
    firings, dropped = _oracle_tumbling(rows, ("delta", "d", d), partitioned)
    assert dropped == sum(row["d"] is None for row in rows)
    per_key = {}
    for row in _arrival(rows):
        if row["d"] is not None:
            per_key.setdefault(_key(partitioned)(row), []).append(row)
    by_id = {row["id"]: row for row in rows}
    for key, tuples in per_key.items():
        windows = [ids for k, _, ids in firings if k == key]
        assert [w for k, w, _ in firings if k == key] == list(range(len(windows)))
        done = sum(len(ids) for ids in windows)
        assert [i for ids in windows for i in ids] == [r["id"] for r in tuples[:done]]
        runs = [[by_id[i] for i in ids] for ids in windows] + [tuples[done:]]
        for run in runs:
            assert not any(_exceeds(r["d"], run[0]["d"], d) for r in run[1:])
        for window, after in zip(runs, runs[1:]):
            assert window and after and _exceeds(after[0]["d"], window[0]["d"], d)


@PURE
@given(rows=scanned(), partitioned=st.booleans())
def test_tumbling_punct_fires_the_tuples_between_markers(rows, partitioned):
    """PUNCT(m): the tuples between two markers (m true; NULL is a tuple) fire per key, NULL key
    first; tuples after the last marker never fire."""
    segments, current = [], []
    for row in _arrival(rows):
        if row["m"]:
            segments.append(current)
            current = []
        else:
            current.append(row)
    expected, ids = [], {}
    for segment in segments:
        keys = {}
        for row in segment:
            keys.setdefault(_key(partitioned)(row), []).append(row["id"])
        for key in sorted(keys, key=_null_first):
            expected.append((key, ids.setdefault(key, 0), keys[key]))
            ids[key] += 1
    assert _oracle_tumbling(rows, ("punct_expr",), partitioned, punct_of=lambda r: r["m"]) == \
        (expected, 0)


@PURE
@given(rows=scanned(), period=st.sampled_from([1, 2, 2.5, 7]), partitioned=st.booleans())
def test_tumbling_time_buckets_by_elapsed_time(rows, period, partitioned):
    """TIME(T) replay: a tuple at t lands in bucket floor((t - t0) / T) (t0: the first arrival);
    a bucket fires, per key in key order, once a tuple arrives at or after its end."""
    timed = _arrival([r for r in rows if r["ts"] is not None], by="ts")
    expected, ids = [], {}
    if timed:
        t0 = timed[0]["ts"]
        step = Fraction(period).limit_denominator()

        def elapsed(row):
            return Fraction(int((row["ts"] - t0).total_seconds()))
        buckets = {}
        for row in timed:
            buckets.setdefault(math.floor(elapsed(row) / step), {}).setdefault(
                _key(partitioned)(row), []).append(row["id"])
        for bucket in sorted(buckets):
            if (bucket + 1) * step <= elapsed(timed[-1]):
                for key in sorted(buckets[bucket], key=_null_first):
                    expected.append((key, ids.setdefault(key, 0), buckets[bucket][key]))
                    ids[key] += 1
    assert _oracle_tumbling(rows, ("time", period), partitioned, order_by=lambda r: r["ts"]) \
        == (expected, sum(r["ts"] is None for r in rows))


POLICIES = {
    "count": st.integers(1, 5).map(lambda n: ("count", n)),
    "delta": st.sampled_from([0, 2, 4, 1e15]).map(lambda d: ("delta", "d", d)),
}


def _sliding_closed_form(rows, eviction, trigger, partitioned, incomplete):
    """SLIDING by index over each key's windowed tuples rs[0..]: the window after inserting
    rs[i] is the last n tuples (count eviction) or every rs[j], j <= i, that no later tuple
    up to rs[i] exceeds by more than δ (delta eviction). A count(m) trigger fires that window after
    every m-th tuple; a delta trigger fires the window before rs[i] when rs[i] exceeds the
    last reference. A firing shows once the key was first full (count: n tuples inserted;
    delta: some tuple evicted), or always with EMIT INCOMPLETE; hidden ones still take ids."""
    uses_d = "delta" in (eviction[0], trigger[0])
    arrival = [r for r in _arrival(rows) if not uses_d or r["d"] is not None]
    position = {row["id"]: i for i, row in enumerate(arrival)}
    per_key = {}
    for row in arrival:
        per_key.setdefault(_key(partitioned)(row), []).append(row)
    out = []
    for key, rs in per_key.items():
        if eviction[0] == "count":
            after = [list(range(max(0, i + 1 - eviction[1]), i + 1)) for i in range(len(rs))]
        else:
            after = [[j for j in range(i + 1)
                      if not any(_exceeds(rs[later]["d"], rs[j]["d"], eviction[2])
                                 for later in range(j + 1, i + 1))] for i in range(len(rs))]
        # full[t]: the key was first full once t of its tuples were inserted.
        evicts = [False] + [bool(set(after[i - 1]) - set(after[i])) for i in range(1, len(rs))]
        full = [t >= eviction[1] if eviction[0] == "count" else any(evicts[:t])
                for t in range(len(rs) + 1)]
        window_id, reference = 0, None
        for i, row in enumerate(rs):
            shown = None
            if trigger[0] == "count" and (i + 1) % trigger[1] == 0:
                shown = (after[i], full[i + 1])
            elif trigger[0] == "delta" and i == 0:
                reference = row["d"]
            elif trigger[0] == "delta" and _exceeds(row["d"], reference, trigger[2]):
                shown, reference = (after[i - 1], full[i]), row["d"]
            if shown is not None:
                if incomplete or shown[1]:
                    out.append((position[row["id"]], key, window_id,
                                [rs[j]["id"] for j in shown[0]]))
                window_id += 1
    return [firing[1:] for firing in sorted(out)], len(rows) - len(arrival)


@pytest.mark.parametrize("eviction", list(POLICIES))
@pytest.mark.parametrize("trigger", list(POLICIES))
def test_sliding_matches_its_closed_form(eviction, trigger):
    """The four COUNT/DELTA eviction x trigger combinations, with and without EMIT INCOMPLETE."""

    @PURE
    @given(rows=scanned(), ev=POLICIES[eviction], tr=POLICIES[trigger],
           partitioned=st.booleans(), incomplete=st.booleans())
    def check(rows, ev, tr, partitioned, incomplete):
        result = sliding_result(rows, ev, tr, order_by=lambda r: r["seq"],
                                partition_by=_key(partitioned) if partitioned else None,
                                emit_incomplete=incomplete)
        assert (_shape(result["firings"]), result["not_windowed"]) == \
            _sliding_closed_form(rows, ev, tr, partitioned, incomplete)
        assert {f["event"] for f in result["firings"]} <= {"TRIGGER"}

    check()


WINDOWS = st.one_of(
    st.tuples(st.just("tumbling"), st.one_of(POLICIES["count"], POLICIES["delta"],
                                              st.just(("punct_expr",))), st.none()),
    st.tuples(st.just("sliding"), POLICIES["count"], st.one_of(POLICIES["count"],
                                                               POLICIES["delta"])),
    st.tuples(st.just("sliding"), POLICIES["delta"], POLICIES["count"]))
LIMITS = st.sampled_from([("count", 1), ("count", 2), ("tuples", 2), ("tuples", 5)])


def _evicting(rows, window, limit, emit):
    kind, policy, trigger = window
    common = dict(partition_eviction=limit, emit_evicted=emit, partition_by=lambda r: r["k"],
                  order_by=lambda r: r["seq"])
    if kind == "tumbling":
        return tumbling_eviction_result(rows, policy, punct_of=lambda r: r["m"], **common)
    return sliding_result(rows, policy, trigger, **common)


@PURE
@given(rows=scanned(), window=WINDOWS, limit=LIMITS, emit=st.booleans())
def test_partition_eviction_conserves_tuples(rows, window, limit, emit):
    """PARTITION EVICTION COUNT/TUPLES: a limit no input reaches changes nothing; EMIT EVICTED
    only adds the victims' firings (the other firings keep their rows); victims' tuples are
    either fired as EVICTED or counted as dropped; a tumbling tuple is flushed or evicted at
    most once."""
    result = _evicting(rows, window, limit, emit)
    unbounded = _evicting(rows, window, (limit[0], 10 ** 6), emit)
    plain = _evicting(rows, window, None, False)
    assert _shape(unbounded["firings"]) == _shape(plain["firings"])
    other = _evicting(rows, window, limit, not emit)
    def kept(res):
        return [(f["partition"], [r["id"] for r in f["rows"]], f["event"])
                for f in res["firings"] if f["event"] != "EVICTED"]
    assert kept(result) == kept(other)
    victims = [(key, [r["id"] for r in event["rows"][key]])
               for event in result["partition_evictions"]
               for key in sorted(event["partitions"], key=_null_first)]
    evicted = [(f["partition"], [r["id"] for r in f["rows"]])
               for f in result["firings"] if f["event"] == "EVICTED"]
    if emit:
        assert evicted == [v for v in victims if v[1]] and result["evicted_tuples"] == 0
    else:
        assert evicted == [] and result["evicted_tuples"] == sum(len(v[1]) for v in victims)
    if window[0] == "tumbling":
        seen = [i for f in result["firings"] if f["event"] == "FLUSH" for i in
                (r["id"] for r in f["rows"])] + [i for _, ids in victims for i in ids]
        assert len(seen) == len(set(seen))


EVENT_TIMES = st.one_of(st.none(), st.integers(-40, 120), st.integers(-400, 1200).map(
    lambda n: n / 10), st.sampled_from([2 ** 53 + 1, 2 ** 62, -(2 ** 62)]))
INTERVALS = st.sampled_from([(10, 5, 0, 0), (10, 10, 0, 3), (4, 7, 2, 1), (6, 2.5, 0, 0.5)])


@PURE
@given(rows=scanned(), times=st.data(), interval=INTERVALS, partitioned=st.booleans())
def test_time_interval_batch_panes_hold_their_times(rows, times, interval, partitioned):
    """TIME_INTERVAL batch default: every (pane, key) holding a tuple fires once, ON_TIME, with
    every tuple whose event time t has start <= t < start + duration, starts at N * period +
    offset (N any integer); in pane order, then key order. Event times include 2^62 (exact)."""
    for row in rows:
        row["et"] = times.draw(EVENT_TIMES)
    duration, period, _, offset = interval
    d, p, o = (Fraction(str(x)) for x in (duration, period, offset))
    panes = {}
    for row in _arrival(rows):
        if row["et"] is None:
            continue
        t = Fraction(str(row["et"])) if isinstance(row["et"], float) else Fraction(row["et"])
        for n in range(math.floor(t / p) - math.ceil(d / p) - 1, math.floor(t / p) + 2):
            if n * p + o <= t < n * p + o + d:
                panes.setdefault(n, {}).setdefault(_key(partitioned)(row), []).append(row["id"])
    expected = [(n, key, "ON_TIME", 0, panes[n][key])
                for n in sorted(panes) for key in sorted(panes[n], key=_null_first)]
    result = pane_firings(rows, *interval, event_time=lambda r: r["et"],
                          order_by=lambda r: r["seq"],
                          partition_by=_key(partitioned) if partitioned else None)
    assert [(f["window_id"], f["partition"], f["timing"], f["index"],
             [r["id"] for r in f["rows"]]) for f in result["firings"]] == expected
    assert result["not_windowed"] == sum(row["et"] is None for row in rows)


@PURE
@given(rows=scanned(), data=st.data())
def test_payload_values_never_change_membership(rows, data):
    """Which rows form a window depends on keys, order, DELTA attributes, markers and clocks,
    never on the value columns: the rows with other values (NaN, infinities, extremes, NULL)
    give the same firings in every family."""
    others = data.draw(window_rows(len(rows), min_rows=len(rows)))
    swapped = [dict(row, **{c: o[c] for c in ("xd", "xf", "xi", "xl")})
               for row, o in zip(rows, others)]
    runs = [
        lambda rs: tumbling_firings_with_dropped(rs, ("delta", "d", 2), order_by=lambda r: r["seq"],
                                                 partition_by=lambda r: r["k"])[0],
        lambda rs: sliding_result(rs, ("delta", "d", 3), ("count", 2),
                                  order_by=lambda r: r["seq"])["firings"],
        lambda rs: tumbling_eviction_result(rs, ("count", 2), partition_eviction=("tuples", 3),
                                            emit_evicted=True, partition_by=lambda r: r["k"],
                                            order_by=lambda r: r["seq"])["firings"],
        lambda rs: pane_firings(rs, 10, 5, event_time=lambda r: r["id"],
                                partition_by=lambda r: r["k"])["firings"],
    ]
    for run in runs:
        assert [[r["id"] for r in f["rows"]] for f in run(rows)] == \
            [[r["id"] for r in f["rows"]] for f in run(swapped)]
