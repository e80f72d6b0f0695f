"""Management-plane load test of `sql-ext thriftserver`: many PyHive clients managing streaming
tables at once while a feeder appends to their source.

    python python/manage_load.py [--clients 16] [--seconds 120] [--json FILE]

Every client sends, for a bounded time, a random mix of CREATE (AVAILABLE NOW and TRIGGER
EVERY), CREATE OR REPLACE, ALTER, REFRESH, STOP STREAM, DROP TABLE, DROP STREAMING TABLE,
queries of the tables and SHOW STREAMS, on three names every client shares and one of its own.
An error is right only where two clients race and it names the problem (EXPECTED). At the end,
with the clients done and the feeder stopped:

- every statement has its answer, and no client hangs (no deadlock);
- the streams the server's JVM runs (Spark's UI, an independent view) are exactly the tables
  SHOW STREAMS lists as RUNNING, and each runs once;
- every name is a streaming table or gone (none left a plain table);
- every streaming table, its running stream caught up or one REFRESH later, holds exactly the
  windows of the batch query over its source.

Prints the statements of each kind (answered, raced, wrong) and their latency; exits 1 on any
wrong answer.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

from pyhive import hive

sys.path.insert(0, str(Path(__file__).resolve().parent))  # thrift_load, beside this file
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # sql_ext, from a checkout
from thrift_load import error_text, keep_log, percentile, start_server, stop_server  # noqa: E402
from sql_ext.server.thrift import free_port  # noqa: E402 - after the path it needs

SHARED = ("mgmt.s0", "mgmt.s1", "mgmt.s2")
COUNTS = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi "
          "FROM {source} WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k ORDER BY seq)")
QUERY = COUNTS.format(source="STREAM(mgmt.src)")
BATCH = COUNTS.format(source="mgmt.src")
# What a client may meet when another changed the same table just before: each names it.
EXPECTED = (
    "no streaming table of that name",  # dropped meanwhile (STOP, REFRESH, DROP STREAMING)
    "exists with another definition",  # created meanwhile with another trigger
    "the stream is running, and it already reads what arrives",  # REFRESH of a running one
    "TABLE_OR_VIEW_NOT_FOUND",  # a query of a table dropped meanwhile
)
# The same race a moment later: the drop lands after Delta listed the table's log and before it
# read the log's files (the soak saw its first commit go), and Spark names the file that went
# away. Only a file of the log: a data file missing from a table that still exists is no race.
DROPPED_WHILE_READ = re.compile(
    r"\[FAILED_READ_FILE\.FILE_NOT_EXIST\] [^\n]*/_delta_log/\d{20}\.json")
KINDS = {  # kind: weight
    "create": 2, "create_every": 2, "replace": 1, "alter": 1.5, "refresh": 1.5, "stop": 1,
    "drop": 0.5, "drop_streaming": 0.7, "select": 2, "show_streams": 1}


def statement(rng: random.Random, kind: str, table: str) -> str:
    every = rng.choice((5, 10))  # ~20 streams share 2 cores here
    return {
        "create": f"CREATE STREAMING TABLE {table} AS {QUERY}",
        "create_every": f"CREATE STREAMING TABLE {table} TRIGGER EVERY {every} AS {QUERY}",
        "replace": f"CREATE OR REPLACE STREAMING TABLE {table} "
                   + rng.choice(("", f"TRIGGER EVERY {every} ")) + f"AS {QUERY}",
        "alter": f"ALTER STREAMING TABLE {table} TRIGGER EVERY {every} AS {QUERY}",
        "refresh": f"REFRESH STREAMING TABLE {table}",
        "stop": f"STOP STREAM {table}",
        "drop": f"DROP TABLE IF EXISTS {table}",
        "drop_streaming": f"DROP STREAMING TABLE IF EXISTS {table}",
        "select": f"SELECT COUNT(*), SUM(n) FROM {table}",
        "show_streams": "SHOW STREAMS",
    }[kind]


def client(port: int, own: str, seed: int, first: list[str], until: float,
           results: list) -> None:
    """Sends a statement of each kind in `first` (however long they take), then random ones
    until `until`."""
    rng = random.Random(seed)
    first = list(first)
    try:
        with hive.connect(host="127.0.0.1", port=port) as conn:
            cursor = conn.cursor()
            while first or time.monotonic() < until:
                kind = first.pop(0) if first else \
                    rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
                table = rng.choice(SHARED) if rng.random() < 0.6 else own
                sql = statement(rng, kind, table)
                started = time.perf_counter()
                outcome, problem = "answered", None
                try:
                    cursor.execute(sql)
                    if cursor.description:
                        cursor.fetchall()
                except Exception as failure:  # noqa: BLE001 - sorted here
                    text = error_text(failure)
                    if any(expected in text for expected in EXPECTED) \
                            or DROPPED_WHILE_READ.search(text):
                        outcome = "raced"
                    else:
                        outcome, problem = "wrong", f"{sql.split(' AS ')[0]}: {text[:800]}"
                results.append((kind, outcome, time.perf_counter() - started, problem))
    except Exception as failure:  # noqa: BLE001 - a broken connection is a failure to report
        results.append(("connection", "wrong", None, f"the connection failed: {failure!r}"))


def feeder(port: int, stop: threading.Event, fed: list) -> None:
    """Appends 12 rows every two seconds, seq in order, two keys."""
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        while not stop.is_set():
            start = fed[0]
            cursor.execute(f"INSERT INTO mgmt.src SELECT id, IF(id % 2 = 0, 'a', 'b') "
                           f"FROM range({start}, {start + 12})")
            fed[0] = start + 12
            stop.wait(2)


def active_in_ui(ui: int) -> list[str]:
    """The names of the streams Spark's UI lists as active (its Structured Streaming tab)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/StreamingQuery/", timeout=30) as r:
        page = r.read().decode()
    active = page.split("Completed Streaming Queries")[0]
    if "Active Streaming Queries" not in active:
        return []
    active = active.split("Active Streaming Queries", 1)[1]
    return [html.unescape(name) for name in re.findall(r"<td>\s*(mgmt\.[\w]+)\s*</td>", active)]


def fetch(cursor, sql: str) -> list:
    cursor.execute(sql)
    return cursor.fetchall()


def end_checks(port: int, ui: int) -> list[str]:
    """What is wrong with the server's state once the clients are done (see the module doc)."""
    problems = []
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        cursor.execute("SHOW STREAMS")
        columns = [d[0] for d in cursor.description]
        streams = {row[0]: dict(zip(columns, row)) for row in cursor.fetchall()}
        listed = sorted(name for name, s in streams.items() if s["state"] == "RUNNING")
        running = active_in_ui(ui)
        if sorted(running) != listed:
            problems.append(f"the JVM runs {sorted(running)}, SHOW STREAMS lists RUNNING "
                            f"{listed}")
        for name, s in streams.items():
            if s["last_error"]:
                problems.append(f"{name} failed: {s['last_error'][:500]}")
        tables = {f"mgmt.{row[1]}" for row in fetch(cursor, "SHOW TABLES IN mgmt")}
        plain = tables - set(streams) - {"mgmt.src"}
        if plain:
            problems.append(f"names left as plain tables: {sorted(plain)}")
        expected = sorted(fetch(cursor, BATCH))
        print(f"at the end: {len(streams)} streaming tables, {len(running)} running "
              f"({', '.join(sorted(running)) or '-'}); the batch query has {len(expected)} "
              "windows")
        for name in sorted(streams):
            if name not in listed:
                cursor.execute(f"REFRESH STREAMING TABLE {name}")
            deadline, got = time.monotonic() + 180, None
            while time.monotonic() < deadline:
                got = sorted(fetch(cursor, f"SELECT k, w, n, lo, hi FROM {name}"))
                if got == expected or name not in listed:
                    break
                time.sleep(1)
            if got != expected:
                missing, extra = set(expected) - set(got), Counter(got) - Counter(expected)
                problems.append(f"{name} differs from its batch query: {len(got)} rows, "
                                f"{len(expected)} expected, missing {sorted(missing)[:3]}, "
                                f"extra or twice {sorted(extra)[:3]}")
    return problems


def report(results: list) -> dict:
    by_kind: dict[str, Counter] = defaultdict(Counter)
    latency: dict[str, list[float]] = defaultdict(list)
    for kind, outcome, elapsed, _ in results:
        by_kind[kind][outcome] += 1
        if elapsed is not None:
            latency[kind].append(elapsed * 1000)
    summary = {}
    print(f"{'kind':<16}{'sent':>6}{'answered':>10}{'raced':>7}{'wrong':>7}{'p50 ms':>9}"
          f"{'p95 ms':>9}")
    for kind in sorted(by_kind):
        counts, times = by_kind[kind], latency[kind]
        p50 = percentile(times, 0.5) if times else 0
        p95 = percentile(times, 0.95) if times else 0
        summary[kind] = {**counts, "p50_ms": round(p50), "p95_ms": round(p95)}
        print(f"{kind:<16}{sum(counts.values()):>6}{counts['answered']:>10}{counts['raced']:>7}"
              f"{counts['wrong']:>7}{p50:>9.0f}{p95:>9.0f}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=120, help="how long clients send")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--json", help="also write the figures and problems here")
    args = parser.parse_args(argv)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="sql_ext_manage_") as work:
        port, ui, log = free_port(), free_port(), Path(work) / "server.log"
        # A statement timeout far above any statement's own time: a hang becomes an answer.
        try:
            server = start_server(Path(work) / "warehouse", port, log,
                                  "--ui-port", str(ui), "--query-timeout", "300")
        except BaseException:
            keep_log(log, args.json)
            raise
        problems: list[str] = []
        try:
            with hive.connect(host="127.0.0.1", port=port) as conn:
                cursor = conn.cursor()
                cursor.execute("CREATE DATABASE mgmt")
                cursor.execute("CREATE TABLE mgmt.src (seq BIGINT, k STRING) USING DELTA")
            fed, stop = [0], threading.Event()
            feed = threading.Thread(target=feeder, args=(port, stop, fed))
            feed.start()
            results: list = []
            started = time.monotonic()
            until = started + args.seconds
            # Client i starts with the kinds i, i + clients, ...: every kind runs, however
            # few clients there are.
            clients = [threading.Thread(target=client, args=(
                port, f"mgmt.own_{i}", args.seed * 100 + i, list(KINDS)[i::args.clients]
                or [list(KINDS)[i % len(KINDS)]], until, results), daemon=True)
                for i in range(args.clients)]
            for thread in clients:
                thread.start()
            for thread in clients:
                thread.join(timeout=max(1.0, until + 420 - time.monotonic()))
            hanging = sum(thread.is_alive() for thread in clients)
            stop.set()
            feed.join()
            wall = time.monotonic() - started
            if hanging:
                problems.append(f"{hanging} clients still wait for an answer 420 s after the "
                                "end: a deadlock or a hang")
            summary = report(results)
            print(f"{len(results)} statements from {args.clients} clients in {wall:.0f} s; "
                  f"{fed[0]} rows fed")
            problems += [problem for _, outcome, _, problem in results if outcome == "wrong"]
            if not hanging:
                problems += end_checks(port, ui)
        finally:
            stop_server(server)
        for problem in problems[:30]:
            print(f"WRONG: {problem}")
        print(f"{len(problems)} problems")
        if problems:
            keep_log(log, args.json)
        if args.json:
            Path(args.json).write_text(json.dumps({"kinds": summary, "problems": problems,
                                                   "rows_fed": fed[0]}, indent=1))
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
