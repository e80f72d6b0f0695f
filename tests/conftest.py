"""One real SparkSession (with the real extension jar and Delta) for the whole test run."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    import sql_ext

    warehouse = tmp_path_factory.mktemp("warehouse")
    # One JVM serves a worker's half of the suite (hundreds of streams, Delta logs, state
    # stores): 2 GB, not Spark's default 1 GB, so the run does not depend on which tests share it.
    # It runs for the whole suite, so it keeps Spark's default compilers (C2): the C1-only
    # setting of `dev.sh test` (SPARK_CONF_DIR) is for the JVMs that tests start and stop.
    test_conf = os.environ.pop("SPARK_CONF_DIR", None)
    try:
        session = sql_ext.session(warehouse=warehouse,
                                  conf={"spark.sql.shuffle.partitions": "2",
                                        "spark.driver.memory": "2g"})
    finally:
        if test_conf is not None:
            os.environ["SPARK_CONF_DIR"] = test_conf
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def thrift_server(tmp_path_factory):
    """A `sql-ext thriftserver` process on its own warehouse, for one test module: its port.
    It serves the UDAFs of tests/udafs/team_aggregates.py (--udafs) to every connection."""
    from test_catalog import _kill, _start_server
    from sql_ext.server.thrift import free_port

    work = tmp_path_factory.mktemp("thrift_server")
    port = free_port()
    process = _start_server(work / "warehouse", port, work / "server.log",
                            "--udafs", "udafs.team_aggregates")
    yield port
    _kill(process, port)


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """A real Kafka broker on 127.0.0.1 (tests/kafka_broker.py) for the whole run: its
    bootstrap address. Stopped by pid."""
    from kafka_broker import Broker

    broker = Broker(tmp_path_factory.mktemp("kafka")).start()
    yield broker.bootstrap
    broker.stop()
