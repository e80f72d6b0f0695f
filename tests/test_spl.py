"""`sql-ext spl`: SPL applications -> streaming tables, views and source tables.

The translation alone (no Spark): what each SPL construct becomes, what is refused and where,
the JSON and script forms, composites and submission-time values. Then its meaning: SPL
Aggregates of every window shape and output function, translated, run over generated tuples
appended in several commits (batch, and as a streaming table), against the reference model of
SPL windows in tests/oracle*.py with groupBy and the output functions modelled here, apart from
the translation."""

from __future__ import annotations

import datetime
import json
import math
import random
import runpy
import subprocess
import sys
import uuid
from collections import OrderedDict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import tumbling_firings
from oracle_panes import pane_firings
from oracle_sliding import sliding_result
from scale import examples, size

from sql_ext.spl import translate, translate_sources
from sql_ext.sql.transpile import transpile

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=examples(6, 40), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

APP = """\
namespace demo.sensors;
use spl.utility::*;

type Reading = rstring sensor, int32 level, float64 temp, timestamp ts;

composite Main {
  param
    expression<int32> $size : (int32) getSubmissionTimeValue("size", "4");
  graph
    @eventTime(eventTimeAttribute = ts, lag = 2.0)
    stream<Reading> Readings = FileSource() { param file: "readings.csv"; }
    stream<Reading, tuple<float64 tempF>> Converted = Functor(Readings) {
      output Converted: tempF = temp * 9.0 / 5.0 + 32.0;
    }
    stream<Converted> Hot = Filter(Converted) { param filter: tempF > 50.0 && level != 0; }
    stream<rstring sensor, int32 n, float64 maxF, int32 avgLevel> Stats = Aggregate(Hot as H) {
      window H: tumbling, count($size), partitioned;
      param partitionBy: sensor;
      output Stats: n = Count(), maxF = Max(H.tempF), avgLevel = Average(level);
    }
    stream<rstring sensor, float64 avgTemp, timestamp start> Panes = Aggregate(Readings) {
      window Readings: timeInterval, intervalDuration(60.0), creationPeriod(30.0), partitioned;
      param partitionBy: sensor;
      output Panes: avgTemp = Average(temp), start = intervalStart();
    }
    stream<int32 total> Mine = Aggregate(Readings) {
      window Readings: sliding, count(5), count(1);
      output Mine: total = Custom(init(), process(level), result());
    }
    () as Sink = FileSink(Stats) { param file: "out.csv"; }
}
"""


def by_stream(result):
    return {s.stream: s for s in result.statements}


def test_a_chain_becomes_a_source_views_and_streaming_tables():
    result = translate(APP, "app.spl")
    statements = by_stream(result)
    assert [s.kind for s in result.statements] == ["source", "view", "view", "streaming_table",
                                                   "streaming_table"]
    assert statements["Readings"].sql.startswith("CREATE TABLE IF NOT EXISTS Readings (\n"
                                                 "  sensor STRING NOT NULL,\n  level INT NOT NULL")
    stats = statements["Stats"]
    # The Filter and Functor on the way are inlined: Spark streams tables, not views.
    assert "FROM STREAM(Readings)\nWHERE ((CAST((((temp * 9.0D) / 5.0D) + 32.0D) AS DOUBLE) > " \
           "50.0D) AND (level <> 0))" in stats.sql
    assert "WINDOW TUMBLING COUNT(4) OVER (PARTITION BY sensor)" in stats.sql
    assert "(SUM(level) DIV COUNT(level))" in stats.sql  # SPL's integer average
    assert stats.query.startswith("SELECT ") and "FROM Readings\n" in stats.query
    assert "WINDOW TIME_INTERVAL(60.0, 30.0, 0, 0) ON ts OVER (PARTITION BY sensor) " \
           "WATERMARK DELAY 2.0" in statements["Panes"].sql
    assert "CAST(PANE_START() AS TIMESTAMP) AS `start`" in statements["Panes"].sql
    assert statements["Hot"].sql.endswith("FROM Converted\nWHERE ((tempF > 50.0D) AND "
                                          "(level <> 0))")


def test_what_is_not_translated_is_said_with_its_place():
    result = translate(APP, "app.spl")
    entries = {(u.operator, u.stream): u for u in result.untranslated}
    assert set(entries) == {("FileSource", "Readings"), ("Aggregate", "Mine"),
                            ("FileSink", "Sink")}
    custom = entries[("Aggregate", "Mine")]
    assert (custom.file, custom.line, custom.column) == ("app.spl", 28, 28)  # at Custom(
    assert "Custom()" in custom.reason and "UDAF" in custom.reason
    assert "its stream Readings is a source table" in entries[("FileSource", "Readings")].reason


def test_submission_time_values_and_composite_parameters():
    assert "COUNT(7)" in by_stream(translate(APP, params={"size": "7"}))["Stats"].sql
    app = """
    composite Windowed(input In; output Out) {
      param expression<int32> $n; expression $key: sensor;
      graph stream<rstring sensor, float64 top> Out = Aggregate(In) {
        window In: tumbling, count($n * 2), partitioned;
        param partitionBy: $key;
        output Out: top = Max(temp);
      }
    }
    composite Main {
      graph
        stream<rstring sensor, float64 temp> Raw = Beacon() {}
        stream<rstring sensor, float64 top> Top = Windowed(Raw) { param n: 3; }
    }"""
    statements = by_stream(translate(app))
    assert "WINDOW TUMBLING COUNT(6) OVER (PARTITION BY sensor)" in statements["Top"].sql
    assert statements["Raw"].kind == "source"


def test_aliases_qualified_attributes_and_composite_types():
    app = """
    composite Parser { type Reading = rstring k, int32 v; graph () as Nothing = Beacon() {} }
    composite Main { graph
      stream<Parser.Reading> In = Beacon() {}
      stream<rstring k, int32 n, list<int32> vs> Counts as O = Aggregate(In as I) {
        window I: tumbling, punct(); param groupBy: I.k;
        output O: n = Count(), vs = Collect(I.v); } }"""
    counts = by_stream(translate(app))["Counts"].sql
    assert counts.startswith("CREATE STREAMING TABLE Counts AS\nSELECT k,\n       CAST(COUNT(*)")
    assert "CAST(COLLECT_LIST(v) AS ARRAY<INT>) AS vs" in counts
    assert counts.endswith("WINDOW TUMBLING PUNCT()\nGROUP BY k")


def test_a_kafka_consumer_is_a_topic_table():
    app = """composite Main { graph
      stream<rstring key, rstring sensor, float64 temp> Raw = KafkaConsumer() {
        param topic: "readings"; kafkaProperty: "bootstrap.servers=broker:9092"; }
      stream<rstring key, float64 top> Top = Aggregate(Raw) {
        window Raw: tumbling, count(2), partitioned; param partitionBy: key;
        output Top: top = Max(temp); } }"""
    statements = by_stream(translate(app))
    assert statements["Raw"].sql == (
        "CREATE TABLE IF NOT EXISTS Raw (\n  sensor STRING,\n  temp DOUBLE\n) USING kafka\n"
        "OPTIONS ('kafka.bootstrap.servers' = 'broker:9092', 'subscribe' = 'readings', "
        "'format' = 'json')")
    assert "OVER (PARTITION BY kafka_key)" in statements["Top"].sql
    assert "SELECT kafka_key AS key," in statements["Top"].sql


def test_syntax_errors_and_mixed_mode_are_reported_and_other_files_still_translate():
    broken = "composite Main { graph stream<int32 a> A = Beacon() { param x: 1 + ; } }"
    result = translate_sources([("ok.spl", APP), ("broken.spl", broken),
                                ("perl.spl", "composite P { graph <% print 1; %> }")])
    assert {s.stream for s in result.statements} >= {"Stats", "Panes"}
    errors = {u.file: u for u in result.untranslated if u.file != "ok.spl"}
    assert (errors["broken.spl"].line, errors["broken.spl"].column) == (1, broken.index("+ ;") + 3)
    assert "mixed-mode" in errors["perl.spl"].reason


@pytest.mark.parametrize("spl_type, spark", [
    ("rstring", "STRING"), ("ustring", "STRING"), ("int8", "TINYINT"), ("uint8", "SMALLINT"),
    ("uint32", "BIGINT"), ("uint64", "DECIMAL(20,0)"), ("float32", "FLOAT"),
    ("boolean", "BOOLEAN"), ("timestamp", "TIMESTAMP"), ("blob", "BINARY"),
    ("list<int32>", "ARRAY<INT>"), ("set<rstring>", "ARRAY<STRING>"),
    ("map<rstring, float64>", "MAP<STRING, DOUBLE>"),
    ("tuple<int32 a, rstring b>", "STRUCT<a: INT, b: STRING>"),
])
def test_types(spl_type, spark):
    app = f"""composite Main {{ graph
        stream<{spl_type} v, int32 k> S = Beacon() {{}}
        stream<int32 k, int32 n> A = Aggregate(S) {{ window S: tumbling, count(2);
          param groupBy: k; output A: n = Count(); }} }}"""
    source = by_stream(translate(app))["S"].sql
    assert f"v {spark} NOT NULL" in source
    optional = by_stream(translate(app.replace(f"<{spl_type} v", f"<optional<{spl_type}> v")))
    assert f"v {spark},\n" in optional["S"].sql


def test_cli_json_and_script(tmp_path):
    app = tmp_path / "app folder" / "app.spl"
    app.parent.mkdir()
    app.write_text(APP)
    command = [sys.executable, "-m", "sql_ext.cli", "spl", str(app), "--param", "size=5"]
    done = subprocess.run(command + ["--json"], capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    assert [s["kind"] for s in answer["statements"]][:2] == ["source", "view"]
    streaming = [s for s in answer["statements"] if s["kind"] == "streaming_table"]
    assert {"stream", "table", "sql", "query"} <= set(streaming[0]) \
        and "COUNT(5)" in streaming[0]["sql"]
    assert {"stream", "line", "column", "reason"} <= set(answer["untranslated"][0])
    assert "not translated:" in done.stderr
    out = tmp_path / "sql"
    subprocess.run(command + ["--out", str(out)], capture_output=True, text=True, check=True)
    script = (out / "app.sql").read_text()
    assert script.startswith(f"-- {app}:11: source for SPL stream Readings\nCREATE TABLE")
    assert "-- Not translated:" in script


# ---- meaning: translated windows against the model --------------------------------------

# SPL's output functions over a group's values in arrival order, written from
# aggregate-functions.md, apart from the translation.
FUNCTIONS = {
    "Max": lambda rows, a: max(r[a] for r in rows),
    "Min": lambda rows, a: min(r[a] for r in rows),
    "Sum": lambda rows, a: sum(r[a] for r in rows),
    "Count": lambda rows, a: len(rows),
    "CountDistinct": lambda rows, a: len({r[a] for r in rows}),
    "First": lambda rows, a: rows[0][a],
    "Last": lambda rows, a: rows[-1][a],
    "Collect": lambda rows, a: [r[a] for r in rows],
    "CollectDistinct": lambda rows, a: list(OrderedDict.fromkeys(r[a] for r in rows)),
    "Average": lambda rows, a: _int_average([r[a] for r in rows]) if a == "val"
    else sum(r[a] for r in rows) / len(rows),
    "MaxCount": lambda rows, a: sum(1 for r in rows if r[a] == max(x[a] for x in rows)),
    "ArgMax": lambda rows, a: next(r["name"] for r in rows if r[a] == max(x[a] for x in rows)),
    "ArgMin": lambda rows, a: next(r["name"] for r in rows if r[a] == min(x[a] for x in rows)),
    "CollectArgMax": lambda rows, a: [r["name"] for r in rows
                                      if r[a] == max(x[a] for x in rows)],
    "CountByDistinct": lambda rows, a: [sum(1 for r in rows if r[a] == v)
                                        for v in OrderedDict.fromkeys(r[a] for r in rows)],
    "PopulationStdDev": lambda rows, a: math.sqrt(
        sum((r[a] - sum(x[a] for x in rows) / len(rows)) ** 2 for r in rows) / len(rows)),
}
# name -> (SPL output type, SPL call)
OUTPUTS = {
    "Max": ("int32", "Max(val)"), "Min": ("float64", "Min(x)"), "Sum": ("int32", "Sum(val)"),
    "Count": ("int32", "Count()"), "CountDistinct": ("int32", "CountDistinct(grp)"),
    "First": ("rstring", "First(name)"), "Last": ("float64", "Last(x)"),
    "Collect": ("list<int32>", "Collect(val)"),
    "CollectDistinct": ("list<rstring>", "CollectDistinct(grp)"),
    "Average": ("int32", "Average(val)"), "MaxCount": ("int32", "MaxCount(val)"),
    "ArgMax": ("rstring", "ArgMax(val, name)"), "ArgMin": ("rstring", "ArgMin(x, name)"),
    "CollectArgMax": ("list<rstring>", "CollectArgMax(val, name)"),
    "CountByDistinct": ("list<int32>", "CountByDistinct(grp)"),
    "PopulationStdDev": ("float64", "PopulationStdDev(x)"),
}
ARGUMENT = {"Max": "val", "Min": "x", "Sum": "val", "Count": None, "CountDistinct": "grp",
            "First": "name", "Last": "x", "Collect": "val", "CollectDistinct": "grp",
            "Average": "val", "MaxCount": "val", "ArgMax": "val", "ArgMin": "x",
            "CollectArgMax": "val", "CountByDistinct": "grp", "PopulationStdDev": "x"}


def _int_average(values):
    total = sum(values)
    return int(total / len(values))  # C++ integer division: toward zero


SHAPES = {
    # name -> (SPL window, oracle kind, oracle args)
    "tumbling count": ("tumbling, count(3)", "tumbling", ("count", 3)),
    "tumbling delta": ("tumbling, delta(seq, 4l)", "tumbling", ("delta", "seq", 4)),
    "tumbling punct": ("tumbling, punct()", "tumbling", ("punct",)),
    "sliding count count": ("sliding, count(3), count(2)", "sliding",
                            (("count", 3), ("count", 2))),
    "sliding delta count": ("sliding, delta(seq, 5l), count(2)", "sliding",
                            (("delta", "seq", 5), ("count", 2))),
    "sliding count delta": ("sliding, count(4), delta(seq, 3l)", "sliding",
                            (("count", 4), ("delta", "seq", 3))),
    "sliding delta delta": ("sliding, delta(seq, 6l), delta(seq, 2l)", "sliding",
                            (("delta", "seq", 6), ("delta", "seq", 2))),
}
COLUMNS = ("key", "grp", "name", "seq", "val", "x")


def spl_app(tag, window, partitioned, grouped, functions, incomplete=False):
    outputs = [("key", "rstring")] if partitioned else []
    outputs += [("grp", "rstring")] if grouped else []
    outputs += [(f"o_{f}", OUTPUTS[f][0]) for f in functions]
    declared = ", ".join(f"{t} {n}" for n, t in outputs)
    params = []
    if partitioned:
        window += ", partitioned"
        params.append("partitionBy: key;")
    if grouped:
        params.append("groupBy: grp;")
    if incomplete:
        params.append("aggregateIncompleteWindows: true;")
    assigned = ", ".join(f"o_{f} = {OUTPUTS[f][1]}" for f in functions)
    return f"""
composite Main {{
  graph
    stream<rstring key, rstring grp, rstring name, int64 seq, int32 val, float64 x> In_{tag} =
        FileSource() {{ param file: "in.csv"; }}
    stream<{declared}> Out_{tag} = Aggregate(In_{tag}) {{
      window In_{tag}: {window};
      {"param " + " ".join(params) if params else ""}
      output Out_{tag}: {assigned};
    }}
}}"""


def model(rows, files, shape, partitioned, grouped, functions, incomplete):
    _, kind, args = SHAPES[shape]
    partition_by = (lambda r: r["key"]) if partitioned else None
    if kind == "tumbling":
        firings = tumbling_firings(rows, args, partition_by=partition_by,
                                   file_of=lambda r: files[id(r)])
    else:
        firings = sliding_result(rows, args[0], args[1], partition_by=partition_by,
                                 emit_incomplete=incomplete)["firings"]
    out = []
    for firing in firings:
        groups = OrderedDict()
        for row in firing["rows"]:
            groups.setdefault(row["grp"] if grouped else None, []).append(row)
        for group, members in groups.items():
            values = [firing["partition"]] if partitioned else []
            values += [group] if grouped else []
            values += [FUNCTIONS[f](members, ARGUMENT[f]) for f in functions]
            out.append(tuple(values))
    return out


def comparable(rows):
    def norm(v):
        if isinstance(v, float):
            return round(v, 6)
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        return v
    return sorted((tuple(norm(v) for v in r) for r in rows), key=repr)


@st.composite
def appends(draw):
    commits = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    rows, seq = [], 0
    for commit in commits:
        batch = []
        for _ in range(commit):
            seq += draw(st.integers(0, 3))
            batch.append({"key": draw(st.sampled_from(["k1", "k2"])),
                          "grp": draw(st.sampled_from(["g1", "g2", "g3"])),
                          "name": f"n{len(rows) + len(batch)}", "seq": seq,
                          "val": draw(st.integers(-5, 9)),
                          "x": float(draw(st.integers(-20, 20))) / 4})
        rows.append(batch)
    return rows


def insert(spark, table, batch):
    values = ", ".join(
        f"('{r['key']}', '{r['grp']}', '{r['name']}', {r['seq']}, {r['val']}, {r['x']!r}D)"
        for r in batch)
    # One file per commit, rows in their order: the arrival order the model replays.
    spark.sql(f"INSERT INTO {table} SELECT /*+ COALESCE(1) */ * FROM VALUES {values}")


def run_translation(spark, app, commits, streaming=False):
    result = translate(app)
    assert result.untranslated[0].operator == "FileSource" and len(result.untranslated) == 1
    source, table = result.statements[0], result.statements[-1]
    spark.sql(source.sql)
    if streaming:
        spark.sql(table.sql)
    for batch in commits:
        insert(spark, source.table, batch)
        if streaming:
            spark.sql(f"REFRESH STREAMING TABLE {table.table}")
    batch = [tuple(r) for r in spark.sql(table.query).collect()]
    streamed = [tuple(r) for r in spark.table(table.table).collect()] if streaming else None
    return batch, streamed


@pytest.mark.soak
@SETTINGS
@given(commits=appends(), shape=st.sampled_from(sorted(SHAPES)), partitioned=st.booleans(),
       grouped=st.booleans(), incomplete=st.booleans(),
       functions=st.lists(st.sampled_from(sorted(OUTPUTS)), min_size=1, max_size=5,
                          unique=True))
def test_random_aggregates_match_the_model(spark, commits, shape, partitioned, grouped,
                                           incomplete, functions):
    tag = uuid.uuid4().hex[:8]
    incomplete = incomplete and SHAPES[shape][1] == "sliding"
    app = spl_app(tag, SHAPES[shape][0], partitioned, grouped, functions, incomplete)
    got, _ = run_translation(spark, app, commits)
    rows = [r for batch in commits for r in batch]
    files = {id(r): i for i, batch in enumerate(commits) for r in batch}
    expected = model(rows, files, shape, partitioned, grouped, functions, incomplete)
    assert comparable(got) == comparable(expected), app


# The suite streams three shapes (file punctuation, a delta eviction, a delta trigger; the
# count shapes stream in the cascade and example tests), the soak every shape: the
# translation is the batch one, which the random test checks for every shape.
@pytest.mark.soak
@pytest.mark.parametrize("shape", size(["tumbling punct", "sliding delta count",
                                        "sliding count delta"], sorted(SHAPES)))
def test_every_shape_and_function_as_a_streaming_table(spark, shape):
    rng = random.Random(shape)
    commits = [[{"key": rng.choice(["k1", "k2"]), "grp": rng.choice(["g1", "g2"]),
                 "name": f"n{c}_{i}", "seq": 3 * c + i, "val": rng.randint(-5, 9),
                 "x": rng.randint(-8, 8) / 2} for i in range(rng.randint(2, 5))]
               for c in range(4)]
    functions = sorted(OUTPUTS)
    tag = uuid.uuid4().hex[:8]
    incomplete = SHAPES[shape][1] == "sliding"
    app = spl_app(tag, SHAPES[shape][0], True, True, functions, incomplete)
    batch, streamed = run_translation(spark, app, commits, streaming=True)
    rows = [r for c in commits for r in c]
    files = {id(r): i for i, c in enumerate(commits) for r in c}
    expected = model(rows, files, shape, True, True, functions, incomplete)
    assert comparable(batch) == comparable(expected)
    assert comparable(streamed) == comparable(batch)


@pytest.mark.soak
@SETTINGS
@given(seconds=st.lists(st.integers(0, 90), min_size=1, max_size=25),
       duration=st.sampled_from([10, 30]), halves=st.booleans(), lag=st.sampled_from([0, 5]),
       partitioned=st.booleans())
def test_time_interval_aggregates_match_the_pane_model(spark, seconds, duration, halves, lag,
                                                       partitioned):
    """Event-time panes: @eventTime's attribute and lag become ON and WATERMARK DELAY, late
    tuples fire their panes again, intervalStart() is the pane's start."""
    tag = uuid.uuid4().hex[:8]
    period = duration // 2 if halves else duration
    rows = [{"key": f"k{i % 2}", "grp": "g", "name": f"n{i}", "seq": i, "val": (i * 7) % 5,
             "x": float(s), "ts": datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=s)}
            for i, s in enumerate(seconds)]
    over = "partitioned" if partitioned else ""
    app = f"""composite Main {{ graph
      @eventTime(eventTimeAttribute = ts, lag = {lag}.0)
      stream<rstring key, rstring name, int32 val, timestamp ts> In_{tag} = FileSource() {{}}
      stream<{'rstring key, ' if partitioned else ''}timestamp start, int32 n, int32 top,
             rstring first, list<rstring> names> Panes_{tag} = Aggregate(In_{tag}) {{
        window In_{tag}: timeInterval, intervalDuration({duration}.0),
                         creationPeriod({period}.0){', ' + over if over else ''};
        {'param partitionBy: key;' if partitioned else ''}
        output Panes_{tag}: start = intervalStart(), n = Count(), top = Max(val),
                            first = First(name), names = Collect(name);
      }} }}"""
    result = translate(app)
    source, table = result.statements[0], result.statements[-1]
    spark.sql(source.sql)
    values = ", ".join(f"('{r['key']}', '{r['name']}', {r['val']}, TIMESTAMP '{r['ts']}')"
                       for r in rows)
    spark.sql(f"INSERT INTO {source.table} SELECT /*+ COALESCE(1) */ * FROM VALUES {values}")
    got = [tuple(r) for r in spark.sql(table.query).collect()]
    expected = []
    for firing in pane_firings(rows, duration, period, event_time=lambda r: r["ts"],
                               partition_by=(lambda r: r["key"]) if partitioned else None,
                               watermark_delay=lag)["firings"]:
        members = firing["rows"]
        expected.append(((firing["partition"],) if partitioned else ()) + (
            firing["pane_start"], len(members), max(r["val"] for r in members),
            members[0]["name"], [r["name"] for r in members]))
    assert comparable(got) == comparable(expected), app


def test_the_example_translation_is_current_and_runs(spark, tmp_path):
    """examples/spl: the committed script is what the command writes today, and the runner
    gives SPL's tuples for the count window (the Filter drops level 0, Average truncates)."""
    example = ROOT / "examples" / "spl"
    subprocess.run([sys.executable, "-m", "sql_ext.cli", "spl", "examples/spl/sensors.spl",
                    "--out", str(tmp_path)], cwd=ROOT, check=True, capture_output=True)
    assert (tmp_path / "sensors.sql").read_text() == (example / "sensors.sql").read_text()
    results = runpy.run_path(str(example / "run_translation.py"))["main"](spark)
    stats = [(r.sensor, r.readings, round(r.maxF, 6), r.avgLevel, r.firstTemp, list(r.levels))
             for r in results["SensorStats"]]
    assert stats == [("s1", 3, 73.4, 4, 20.0, [3, 4, 5]), ("s2", 3, 78.8, 1, 25.5, [1, 2, 2])]
    minutes = results["SensorMinutes"]
    assert {r.sensor for r in minutes} == {"s1", "s2"} and all(r.readings > 0 for r in minutes)


def test_cascaded_aggregates_and_logic_state():
    app = """composite Main { graph
      stream<rstring k, int32 v> In = Beacon() {}
      stream<rstring k, int32 total> Totals = Aggregate(In) {
        logic state: { mutable int32 unused = 0; }
        window In: tumbling, count(2), partitioned; param partitionBy: k;
        output Totals: total = Sum(v); }
      stream<rstring k, int32 best> Best = Aggregate(Totals) {
        window Totals: sliding, count(3), count(1), partitioned; param partitionBy: k;
        output Best: best = Max(total); }
      stream<rstring k, int32 n> Counted = Aggregate(In) {
        logic onTuple In: { println(In); }
        window In: tumbling, count(2); output Counted: n = Count(); } }"""
    result = translate(app)
    statements = by_stream(result)
    assert [s.kind for s in result.statements] == ["source", "streaming_table",
                                                   "streaming_table"]
    assert "FROM STREAM(Totals)" in statements["Best"].sql  # the first streaming table
    refused = {u.stream: u.reason for u in result.untranslated}
    assert refused["Counted"] == "a logic clause runs SPL code per tuple (onTuple)"


def test_a_cascade_of_aggregates_matches_the_model(spark):
    """An Aggregate over another's output reads the first streaming table, in the order its
    windows fired."""
    tag = uuid.uuid4().hex[:8]
    app = f"""composite Main {{ graph
      stream<rstring key, int32 val> In_{tag} = Beacon() {{}}
      stream<rstring key, int32 total> Totals_{tag} = Aggregate(In_{tag}) {{
        window In_{tag}: tumbling, count(2), partitioned; param partitionBy: key;
        output Totals_{tag}: total = Sum(val); }}
      stream<rstring key, int32 best, list<int32> seen> Best_{tag} = Aggregate(Totals_{tag}) {{
        window Totals_{tag}: sliding, count(3), count(1), partitioned; param partitionBy: key;
        aggregateIncompleteWindows: true;
        output Best_{tag}: best = Max(total), seen = Collect(total); }} }}"""
    result = translate(app)
    for statement in result.statements:
        spark.sql(statement.sql)
    rng = random.Random(7)
    commits = [[{"key": rng.choice(["a", "b"]), "val": rng.randint(0, 9)} for _ in range(5)]
               for _ in range(4)]
    for commit in commits:
        values = ", ".join(f"('{r['key']}', {r['val']})" for r in commit)
        spark.sql(f"INSERT INTO In_{tag} SELECT /*+ COALESCE(1) */ * FROM VALUES {values}")
        for statement in result.statements[1:]:
            spark.sql(f"REFRESH STREAMING TABLE {statement.table}")
    rows = [r for c in commits for r in c]
    totals = [{"key": f["partition"], "total": sum(r["val"] for r in f["rows"])}
              for f in tumbling_firings(rows, ("count", 2), partition_by=lambda r: r["key"])]
    best = sliding_result(totals, ("count", 3), ("count", 1), partition_by=lambda r: r["key"],
                          emit_incomplete=True)["firings"]
    expected = [(f["partition"], max(r["total"] for r in f["rows"]),
                 [r["total"] for r in f["rows"]]) for f in best]
    streamed = [tuple(r)[:3] for r in spark.table(f"Best_{tag}").collect()]
    assert comparable(streamed) == comparable(expected)


def test_several_input_streams_read_the_source_table_of_their_union():
    app = """composite Main { graph
      stream<rstring k, int32 v> East = Beacon() {}
      stream<rstring k, int32 v> West = Beacon() {}
      stream<rstring k, int32 w> Other = Beacon() {}
      stream<rstring k, int32 top> Top = Aggregate(East, West) {
        window East: tumbling, count(2), partitioned; param partitionBy: k;
        output Top: top = Max(v); }
      stream<rstring k, int32 top> Mixed = Aggregate(East, Other) {
        window East: tumbling, count(2); output Mixed: top = Max(v); } }"""
    result = translate(app)
    union = result.statements[0]
    assert (union.kind, union.stream, union.table) == ("source", "East, West", "East_West")
    assert "FROM STREAM(East_West)" in by_stream(result)["Top"].sql
    refused = {u.stream: u.reason for u in result.untranslated}
    assert refused["Mixed"] == "several input streams (East, Other) whose types differ or are " \
                               "unknown"
    filtered = translate(app.replace("Mixed = Aggregate(East, Other) {",
                                     "Mixed = Aggregate(Kept) {")
                         .replace("window East: tumbling, count(2); output Mixed",
                                  "window Kept: tumbling, count(2); output Mixed")
                         .replace("stream<rstring k, int32 w> Other = Beacon() {}",
                                  "stream<rstring k, int32 v> Kept = Filter(East, West) "
                                  "{ param filter: v > 0; }"))
    # A Filter over both streams reads their union table too, as a view and inlined.
    kept = by_stream(filtered)["Kept"]
    assert kept.sql.endswith("FROM East_West\nWHERE (v > 0)")
    assert "FROM STREAM(East_West)\nWHERE (v > 0)" in by_stream(filtered)["Mixed"].sql


def test_partition_eviction_and_emit_options():
    app = """composite Main { graph
      stream<rstring k, int32 v> In = Beacon() {}
      stream<rstring k, int32 top> A = Aggregate(In) {
        window In: tumbling, count(4), partitioned, partitionAge(30.0);
        param partitionBy: k; aggregateEvictedPartitions: true;
        output A: top = Max(v); }
      stream<rstring k, int32 top> B = Aggregate(In) {
        window In: sliding, count(4), count(1), partitioned, tupleCount(100);
        param partitionBy: k; aggregateIncompleteWindows: true;
        output B: top = Max(v); }
      stream<rstring k, int32 top> C = Aggregate(In) {
        window In: tumbling, count(0), partitioned, partitionCount(5);
        param partitionBy: k; output C: top = Max(v); }
      stream<int32 top> D = Aggregate(In) {
        window In: tumbling, count(3); param aggregateIncompleteWindows: true;
        output D: top = Max(v); } }"""
    result = translate(app)
    statements = by_stream(result)
    assert statements["A"].sql.endswith(
        "WINDOW TUMBLING COUNT(4) OVER (PARTITION BY k) PARTITION EVICTION AGE(30.0) EMIT EVICTED")
    assert statements["B"].sql.endswith("WINDOW SLIDING COUNT(4) TRIGGER COUNT(1) OVER "
                                        "(PARTITION BY k) PARTITION EVICTION TUPLES(100) "
                                        "EMIT INCOMPLETE")
    # A tumbling window fires complete whatever aggregateIncompleteWindows says: no EMIT
    # INCOMPLETE, which SQL refuses for TUMBLING (the query transpiles, read in batch).
    assert statements["D"].sql.endswith("WINDOW TUMBLING COUNT(3)")
    transpile(statements["D"].sql.split(" AS\n", 1)[1].replace("STREAM(`In`)", "`In`"))
    refused = {u.stream: u for u in result.untranslated}
    assert refused["C"].reason == "count(0): SQL windows count at least 1 tuple"
    assert (refused["C"].line, refused["C"].column) == (12, 30)  # at count(0)
