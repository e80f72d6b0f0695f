"""Load test of `sql-ext thriftserver` (issue 15): concurrent PyHive clients over 127.0.0.1.

    bash python/dev.sh load [--clients 16] [--statements 1040] [--json FILE]

Starts a server in its own process on a fresh warehouse, then every client sends its share of
a shuffled mix on one connection: windowed queries whose rows are checked against a Python
oracle, the same results in plain Spark SQL (the row_number / window() forms, so the cost of
the rewrite path shows beside them), malformed windowed and plain statements (each must be an
error that names the problem, and the connection must serve the next statement), plain SQL and
SHOW STREAMS. Prints p50/p95 latency per statement kind; exits 1 on any wrong answer, any
statement without its error, or a server that is gone at the end. Bounded: every statement has
a deadline and the run stops with its last client.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from pyhive import hive

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # sql_ext, from a checkout
from sql_ext.server.thrift import free_port, wait_for_port  # noqa: E402 - after the path it needs

CUSTOMERS = ["ann", "bob", "cyd", "dee", "eve", "fay"]
ROWS = 240  # seq 0..239, customer seq % 6, cost seq % 17, ts = seq * 7 s

# Malformed windowed statements: each must be an error whose message holds the fragment.
MALFORMED = [
    ("SELECT SUM(cost) FROM load_orders WINDOW TUMBLING COUNT(0)",
     "COUNT(0): the count must be at least 1"),
    ("SELECT SUM(cost) FROM load_orders WINDOW TUMBLING DELTA(, 60)", "DELTA"),
    ("SELECT SUM(cost) WINDOW TUMBLING COUNT(3)", "FROM"),
    ("SELECT SUM(cost) FROM load_orders WINDOW TUMBLING COUNT(3) OVER (ORDER BY)", "ORDER BY"),
    ("SELECT SUM(cost) FROM load_orders WINDOW TUMBLING COUNT(3) OVER (PARTITION BY)",
     "PARTITION BY"),
    ("SELECT SUM(nope) FROM load_orders WINDOW TUMBLING COUNT(3)", "nope"),
    ("SELECT customer, SUM(cost) FROM load_orders WINDOW TUMBLING COUNT(3)", "customer"),
    ("SELECT SUM(cost) FROM load_orders WINDOW SLIDING COUNT(5)",
     "a SLIDING window needs TRIGGER"),
    ("SELECT SUM(cost) FROM load_orders WINDOW TIME_INTERVAL(0) ON ts", "duration"),
    ("SELECT SUM(cost) FROM load_orders WINDOW TUMBLING COUNT(3) WATERMARK DELAY 5",
     "WATERMARK applies to TIME_INTERVAL windows only"),
    ("SELECT SUM(cost) FROM load_missing WINDOW TUMBLING COUNT(3)", "load_missing"),
    ("SELECT SUM(cost) FROM load_orders WINDOW TUMBLING TIME(5)", "ORDER BY"),
    ("SELECT SUM(cost) FROM load_orders WINDOW SLIDING PUNCT() TRIGGER COUNT(1)", "PUNCT"),
    ("SELECT SUM(cost) FROM load_orders WINDOW TUMBLING DELTA(customer, 3) "
     "OVER (ORDER BY seq)", "DELTA"),
]
MALFORMED_PLAIN = [
    ("SELECT SUM(cost) FROM load_orders GROUP BY", "PARSE_SYNTAX_ERROR"),
    ("SELECT SUM(nope) FROM load_orders", "nope"),
    ("SELECT FROM load_orders WHERE", "PARSE_SYNTAX_ERROR"),
]
# Texts that must never reach a user: the rewrite's helper names and internal plans.
LEAKS = ["__sx", "WindowAssign", "sql_ext_window", "internal error"]


def orders() -> list[tuple[int, str, int, int]]:
    return [(seq, CUSTOMERS[seq % 6], seq % 17, seq * 7) for seq in range(ROWS)]


def tumbling_expected(n: int) -> list[tuple]:
    """TUMBLING COUNT(n) per customer in seq order: full windows only (a final punctuation
    flushes nothing), (customer, window, sum)."""
    result = []
    for customer in CUSTOMERS:
        costs = [cost for _, c, cost, _ in orders() if c == customer]
        for w in range(len(costs) // n):
            result.append((customer, w, sum(costs[w * n:(w + 1) * n])))
    return sorted(result)


def panes_expected(d: int) -> list[tuple]:
    """TIME_INTERVAL(d) ON ts per customer (all input present): (customer, start, count, max)."""
    panes: dict[tuple[str, int], list[int]] = defaultdict(list)
    for _, customer, cost, ts in orders():
        panes[(customer, ts // d * d)].append(cost)
    return sorted((c, start, len(v), max(v)) for (c, start), v in panes.items())


KINDS = {"tumbling": 3, "tumbling_plain": 3, "panes": 3, "panes_plain": 3, "malformed": 4,
         "malformed_plain": 2, "plain": 2, "show_streams": 1}  # kind: weight in the mix


def statements(rng: random.Random, kind: str | None = None,
               malformed: tuple[str, str] | None = None) -> tuple[str, str, object]:
    """One statement: (kind, sql, expected rows or an error fragment); of `kind` (and, for the
    malformed kinds, the statement `malformed`) where given, else drawn."""
    kind = kind or rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    n, d = rng.randint(2, 9), rng.choice([30, 60, 120, 300])
    if kind == "tumbling":
        return kind, ("SELECT customer, WINDOW_ID() AS w, SUM(cost) AS total FROM load_orders "
                      f"WINDOW TUMBLING COUNT({n}) OVER (PARTITION BY customer ORDER BY seq)"), \
            tumbling_expected(n)
    if kind == "tumbling_plain":
        return kind, ("SELECT customer, w, SUM(cost) AS total FROM (SELECT customer, cost, "
                      f"FLOOR((ROW_NUMBER() OVER (PARTITION BY customer ORDER BY seq) - 1) / {n})"
                      f" AS w FROM load_orders) GROUP BY customer, w HAVING COUNT(*) = {n}"), \
            tumbling_expected(n)
    if kind == "panes":
        return kind, ("SELECT customer, PANE_START() AS s, COUNT(*) AS c, MAX(cost) AS m "
                      f"FROM load_orders WINDOW TIME_INTERVAL({d}) ON t "
                      "OVER (PARTITION BY customer)"), panes_expected(d)
    if kind == "panes_plain":
        return kind, ("SELECT customer, CAST(window.start AS BIGINT) AS s, "
                      "COUNT(*) AS c, MAX(cost) AS m FROM load_orders_ts "
                      f"GROUP BY customer, window(ts, '{d} seconds')"), panes_expected(d)
    if kind == "malformed":
        return (kind, *(malformed or rng.choice(MALFORMED)))
    if kind == "malformed_plain":
        return (kind, *(malformed or rng.choice(MALFORMED_PLAIN)))
    if kind == "plain":
        return kind, ("SELECT customer, COUNT(*), SUM(cost) FROM load_orders GROUP BY customer"), \
            sorted((c, ROWS // 6, sum(cost for _, cc, cost, _ in orders() if cc == c))
                   for c in CUSTOMERS)
    return kind, "SHOW STREAMS", "default.load_stream"


def covering(rng: random.Random) -> list[tuple[str, str, object]]:
    """Every kind of statement once and every malformed statement once: a mix that starts with
    these checks all of them however few statements it has."""
    return ([statements(rng, kind) for kind in KINDS if not kind.startswith("malformed")]
            + [statements(rng, "malformed", m) for m in MALFORMED]
            + [statements(rng, "malformed_plain", m) for m in MALFORMED_PLAIN])


def check(kind: str, rows, error: str | None, expected) -> str | None:
    """None when the answer is right, else what is wrong."""
    if kind.startswith("malformed"):
        if error is None:
            return f"no error (rows {rows[:3]})"
        if expected not in error:
            return f"error without {expected!r}: {error[:300]}"
        leaked = [word for word in LEAKS if word in error]
        return f"error leaks {leaked}: {error[:300]}" if leaked else None
    if error is not None:
        return f"error: {error[:300]}"
    if kind == "show_streams":
        return None if any(row[0] == expected for row in rows) else f"no {expected} in {rows}"
    got = sorted(tuple(int(v) if isinstance(v, float) else v for v in row) for row in rows)
    return None if got == expected else f"rows differ: {got[:4]} vs {expected[:4]}"


def error_text(error: Exception) -> str:
    """PyHive's OperationalError carries the server's response; its status has the text."""
    response = error.args[0] if error.args else None
    status = getattr(response, "status", response)
    return getattr(status, "errorMessage", None) or str(error)


def client(port: int, work: list[tuple[str, str, object]], deadline: float, results: list):
    started = time.monotonic()
    try:
        _statements(port, work, deadline, results)
    except Exception as failure:  # noqa: BLE001 - a broken connection is a failure to report
        results.append(("connection", None, f"the connection failed "
                        f"{time.monotonic() - started:.1f} s into the run: {failure!r}"))


def _statements(port: int, work: list[tuple[str, str, object]], deadline: float,
                results: list) -> None:
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        for kind, sql, expected in work:
            if time.monotonic() > deadline:
                results.append((kind, None, "the run's deadline passed before this statement"))
                continue
            started = time.perf_counter()
            rows, error = None, None
            try:
                cursor.execute(sql)
                rows = cursor.fetchall() if cursor.description else []
            except Exception as failure:  # noqa: BLE001 - every failure is an answer here
                error = error_text(failure)
            elapsed = time.perf_counter() - started
            results.append((kind, elapsed, check(kind, rows, error, expected)))


def setup(port: int) -> None:
    values = ", ".join(f"({seq}, '{c}', {cost}, {ts})" for seq, c, cost, ts in orders())
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE TABLE load_orders (seq BIGINT, customer STRING, cost BIGINT, "
                       "t BIGINT) USING DELTA")
        cursor.execute(f"INSERT INTO load_orders VALUES {values}")
        cursor.execute("CREATE OR REPLACE VIEW load_orders_ts AS SELECT *, "
                       "TIMESTAMP_SECONDS(t) AS ts FROM load_orders")
        cursor.execute("CREATE STREAMING TABLE load_stream TRIGGER AVAILABLE NOW AS "
                       "SELECT customer, WINDOW_ID() AS w, SUM(cost) AS total "
                       "FROM STREAM(load_orders) WINDOW TUMBLING COUNT(4) "
                       "OVER (PARTITION BY customer ORDER BY seq)")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(results: list, wall: float) -> dict:
    by_kind: dict[str, list[float]] = defaultdict(list)
    for kind, elapsed, _ in results:
        if elapsed is not None:
            by_kind[kind].append(elapsed * 1000)
    summary = {kind: {"n": len(v), "p50_ms": round(statistics.median(v), 1),
                      "p95_ms": round(percentile(v, 0.95), 1)}
               for kind, v in sorted(by_kind.items())}
    print(f"{'kind':<16}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}   plain SQL equivalent")
    for kind, figures in summary.items():
        if kind.endswith("_plain"):
            continue
        plain = summary.get(kind + "_plain")
        ratio = figures["p50_ms"] / plain["p50_ms"] if plain and plain["p50_ms"] else None
        beside = (f"{kind}_plain: p50 {plain['p50_ms']:.0f} ms, p95 {plain['p95_ms']:.0f} ms "
                  f"(p50 ratio {ratio:.2f})" if ratio is not None else "")
        print(f"{kind:<16}{figures['n']:>6}{figures['p50_ms']:>10.0f}{figures['p95_ms']:>10.0f}"
              f"   {beside}")
    print(f"{len(results)} statements in {wall:.1f} s ({len(results) / wall:.1f} per s)")
    return summary


def start_server(warehouse: Path, port: int, log: Path, *options: str) -> subprocess.Popen:
    """`sql-ext thriftserver` with `options` in its own process (session) on `warehouse`."""
    with open(log, "w") as out:
        process = subprocess.Popen(
            # -X faulthandler: a crash of the server's Python side leaves its stacks in the log.
            [sys.executable, "-X", "faulthandler", "-m", "sql_ext.cli", "thriftserver",
             "--port", str(port), "--warehouse", str(warehouse), *options],
            stdout=out, stderr=subprocess.STDOUT, cwd=warehouse.parent, start_new_session=True)
    try:
        wait_for_port("127.0.0.1", port, timeout=180, process=process)
    except BaseException:
        stop_server(process)
        raise
    return process


def stop_server(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, SIGKILL after a minute (a group already gone
    is fine)."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--statements", type=int, default=1040)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--deadline", type=float, default=1200, help="seconds for the run")
    parser.add_argument("--json", help="also write the figures and failures here")
    parser.add_argument("--cover", action="store_true",
                        help="start the mix with every kind and every malformed statement once "
                             "(the tests' small run checks each of them)")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    mix = covering(rng) if args.cover else []
    mix += [statements(rng) for _ in range(args.statements - len(mix))]
    rng.shuffle(mix)
    shares = [mix[i::args.clients] for i in range(args.clients)]
    with tempfile.TemporaryDirectory(prefix="sql_ext_load_") as work:
        port, log = free_port(), Path(work) / "server.log"
        try:
            server = start_server(Path(work) / "warehouse", port, log)
            setup(port)
        except BaseException:
            keep_log(log, args.json)
            raise
        try:
            results: list = []
            started = time.monotonic()
            threads = [threading.Thread(target=client, args=(
                port, share, started + args.deadline, results)) for share in shares]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.monotonic() - started
            failures = [(kind, problem) for kind, _, problem in results if problem]
            exit_code = server.poll()
            alive = exit_code is None and _answers(port)
            summary = report(results, wall)
        finally:
            stop_server(server)
        for kind, problem in failures[:20]:
            print(f"WRONG {kind}: {problem}")
        print(f"{len(failures)} wrong answers; server alive at the end: {alive}")
        if args.json:
            Path(args.json).write_text(json.dumps({
                "statements": len(results), "seconds": round(wall, 1), "latency": summary,
                "failures": failures, "alive": alive}, indent=1))
        if failures or not alive:
            print(f"server exit code during the run: {exit_code}", file=sys.stderr)
            keep_log(log, args.json)
            for crash in Path(work).glob("hs_err_pid*.log"):  # the JVM's own crash report
                print(crash.read_text()[:3000], file=sys.stderr)
        return 0 if not failures and alive and len(results) == args.statements else 1


# Server log lines that say why clients failed: errors, and what stops or refuses connections.
LOG_SIGNS = ("ERROR", "Error", "Exception in", "saturated", "CodeCache", "SparkContext",
             "TTransportException", "OutOfMemory")


def keep_log(log: Path, figures: str | None) -> None:
    """Prints the server log's telling lines, then its end, to stderr (a caller may keep only
    the end of the output), and keeps the whole log beside the figures file, which outlives the
    run's folder."""
    text = log.read_text() if log.exists() else "(no log)"
    signs = [line for line in text.splitlines() if any(sign in line for sign in LOG_SIGNS)]
    print("server log's errors:\n" + "\n".join(signs[:30]), file=sys.stderr)
    if figures:
        Path(figures).with_name("server.log").write_text(text)
    print(f"the server log ends:\n{text[-3000:]}", file=sys.stderr)


def _answers(port: int) -> bool:
    """The server serves a new connection after the load."""
    try:
        with hive.connect(host="127.0.0.1", port=port) as conn:
            cursor = conn.cursor()
            cursor.execute("SELECT COUNT(*) FROM load_orders")
            return cursor.fetchall() == [(ROWS,)]
    except Exception:  # noqa: BLE001 - a dead server answers with any error
        return False


if __name__ == "__main__":
    sys.exit(main())
