"""Fair share on a shared `sql-ext thriftserver`: the latency of a small windowed query alone,
and while another client runs a heavy windowed query, under the FAIR scheduler (the server's
default) and under Spark's FIFO (--scheduler fifo), both measured in this run.

    python python/bench_sharing.py [--small 12] [--budget 150]

Prints p50 / p95 of the small query per scheduler and the ratio beside / alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from pyhive import hive

sys.path.insert(0, str(Path(__file__).resolve().parent))  # thrift_load, beside this file
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # sql_ext, from a checkout
from thrift_load import start_server, stop_server  # noqa: E402 - after the path
from sql_ext.server.thrift import free_port  # noqa: E402

SMALL = ("SELECT customer, WINDOW_ID() AS w, SUM(cost) AS total FROM orders "
         "WINDOW TUMBLING COUNT(4) OVER (PARTITION BY customer ORDER BY seq)")
# Heavy: 64 splits of a large source, as files give; each task a second or two here.
HEAVY = ("SELECT k, COUNT(*) FROM (SELECT k, WINDOW_ID() AS w, SUM(seq) AS s FROM "
         "(SELECT id AS seq, id % 100 AS k FROM range(0, 300000000, 1, 64)) "
         "WINDOW TUMBLING COUNT(10) OVER (PARTITION BY k ORDER BY seq)) GROUP BY k")


def timed(cursor, sql: str) -> float:
    started = time.perf_counter()
    cursor.execute(sql)
    cursor.fetchall()
    return time.perf_counter() - started


def measure(scheduler: str, small: int, budget: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="sql_ext_share_") as work:
        port = free_port()
        server = start_server(Path(work) / "warehouse", port, Path(work) / "server.log",
                              "--scheduler", scheduler)
        try:
            with hive.connect(host="127.0.0.1", port=port) as conn:
                cursor = conn.cursor()
                cursor.execute("CREATE TABLE orders USING DELTA AS SELECT id AS seq, "
                               "CAST(id % 6 AS STRING) AS customer, id % 17 AS cost "
                               "FROM range(0, 240)")
                for _ in range(3):  # warm: the first runs compile the plans
                    timed(cursor, SMALL)
                alone = [timed(cursor, SMALL) for _ in range(small)]
                beside = _beside_heavy(port, cursor, small, budget)
            return {"alone": alone, "beside": beside}
        finally:
            stop_server(server)


def _beside_heavy(port: int, cursor, small: int, budget: float) -> list[float]:
    """The small query's latencies while another session runs the heavy query again and
    again, until `small` of them ran or `budget` seconds passed."""
    done = threading.Event()

    def heavy() -> None:
        try:
            with hive.connect(host="127.0.0.1", port=port) as conn:
                other = conn.cursor()
                while not done.is_set():
                    timed(other, HEAVY)
        except Exception:  # noqa: BLE001 - the server stops under its last heavy query
            if not done.is_set():
                raise
    thread = threading.Thread(target=heavy, daemon=True)
    thread.start()
    time.sleep(5)  # the heavy query's tasks hold both cores
    latencies, deadline = [], time.monotonic() + budget
    while len(latencies) < small and time.monotonic() < deadline:
        latencies.append(timed(cursor, SMALL))
    done.set()
    return latencies


def figures(values: list[float]) -> str:
    if not values:
        return "none finished"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(values) * 1000:7.0f} ms  p95 {p95 * 1000:7.0f} ms  n {len(values)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=12, help="small queries per phase")
    parser.add_argument("--budget", type=float, default=150,
                        help="seconds for the small queries beside the heavy one")
    parser.add_argument("--schedulers", default="fair,fifo")
    args = parser.parse_args(argv)
    for scheduler in args.schedulers.split(","):
        result = measure(scheduler, args.small, args.budget)
        alone, beside = result["alone"], result["beside"]
        ratio = statistics.median(beside) / statistics.median(alone) if beside else float("inf")
        print(f"{scheduler:<5} alone        {figures(alone)}")
        print(f"{scheduler:<5} beside heavy {figures(beside)}  (p50 ratio {ratio:.1f})",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
