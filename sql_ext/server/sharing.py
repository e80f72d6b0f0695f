"""How many clients share one server: Spark's FAIR scheduler with a FAIR default pool
(fair_pools.xml), so that a client's small query does not wait behind another's large one, and
a statement time limit (Spark's own spark.sql.thriftServer.queryTimeout): a statement past it is
cancelled, its jobs stop, and a streaming statement's pass stops between micro-batches
(io.sqlext.commands.AwaitedStreams).

    sql-ext thriftserver --query-timeout 600     # every statement, every session
    SET spark.sql.thriftServer.queryTimeout=60s; -- this session's statements (the lower wins)
    JDBC Statement.setQueryTimeout(30)           -- one statement (the lower wins)
"""

from __future__ import annotations

from pathlib import Path

FAIR_POOLS = Path(__file__).with_name("fair_pools.xml")
QUERY_TIMEOUT = "spark.sql.thriftServer.queryTimeout"


def server_conf(query_timeout: float | None, scheduler: str = "fair") -> dict[str, str]:
    """Session settings for a server that many clients share; `query_timeout`: seconds a
    statement may take (None or 0: no limit, Spark's default); `scheduler`: fair, or fifo
    (Spark's default: the jobs of one statement after those of the statements before it)."""
    conf = {"spark.scheduler.mode": "FIFO"} if scheduler == "fifo" else {
        "spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": str(FAIR_POOLS)}
    if query_timeout:
        conf[QUERY_TIMEOUT] = f"{max(int(query_timeout), 1)}s"
    return conf
