"""What the whole test run shares, and how it reports where its time went.

- One real SparkSession (with the real extension jar and Delta) per worker (`spark`).
- One `sql-ext thriftserver`, one `sql-ext connect-server` and one Kafka broker for the whole
  run, shared by every worker (tests/shared_servers.py): each starts in the background as soon
  as a worker's collection holds a test that uses it. Tests on them keep to names of their own.
- One signed-in Thrift server for the security suite (`secured_server`, tests/secured.py).
- The heavy tests first (`heavy` marker; see `_heavy_first`); tests that share an expensive
  module fixture stay on one worker (`xdist_group`).
- At the end: the 25 slowest tests (pytest's --durations) and the time per test module.
"""

import functools
import os
import re
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_servers import CONNECT_TOKEN, SharedServers  # noqa: E402 - after the path it needs

# Fixture -> the shared server it waits for.
SHARED_FIXTURES = {"thrift_server": "thrift", "thrift_ui": "thrift", "connect_server": "connect",
                   "kafka": "kafka"}


def pytest_addoption(parser):
    parser.addoption("--reverse-modules", action="store_true",
                     help="run the test modules in reverse order (a check that no module "
                          "depends on what an earlier one left behind)")


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path_factory is set up
def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: a test of a minute or more; started first")
    config.addinivalue_line("markers", "soak: a full-size load or loop (`dev.sh soak`)")
    if hasattr(config, "workerinput"):
        folder = Path(config.workerinput["sql_ext_shared"])
    else:  # the controller (or a run without workers): it owns the servers
        folder = config._tmp_path_factory.getbasetemp() / "shared_servers"
        config.sql_ext_owner = True
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(_HandOver(), "sql_ext_hand_over")
    config.sql_ext_shared = SharedServers(folder)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_ModuleTimes(), "sql_ext_module_times")


class _HandOver:
    """Tells each xdist worker where the run's shared servers are recorded."""

    @pytest.hookimpl
    def pytest_configure_node(self, node):
        node.workerinput["sql_ext_shared"] = str(node.config.sql_ext_shared.folder)


def pytest_unconfigure(config):
    if getattr(config, "sql_ext_owner", False):
        config.sql_ext_shared.stop_all()


def pytest_collection_modifyitems(config, items):
    if config.getoption("--reverse-modules"):
        order = list(dict.fromkeys(item.module.__name__ for item in items))[::-1]
        rank = {name: i for i, name in enumerate(order)}
        items.sort(key=lambda item: rank[item.module.__name__])  # stable within a module
    items[:] = _heavy_first(items)


def _heavy_first(items: list) -> list:
    """The heavy tests first: `dev.sh test` runs xdist's loadgroup without its reordering,
    which hands each worker the next test (or group) of this list whenever it has few left, so
    the long tests start early, on both workers, and the short ones fill the end."""
    return sorted(items, key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_collection_finish(session):
    """Starts the shared servers the collected tests use, in the background."""
    if session.config.option.collectonly:
        return
    used = {SHARED_FIXTURES[name] for item in session.items
            for name in getattr(item, "fixturenames", ()) if name in SHARED_FIXTURES}
    for name in sorted(used):
        session.config.sql_ext_shared.start(name)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    import sql_ext

    warehouse = tmp_path_factory.mktemp("warehouse")
    # One JVM serves a worker's half of the suite (hundreds of streams, Delta logs, state
    # stores): 2 GB, not Spark's default 1 GB, so the run does not depend on which tests share it.
    # It runs for the whole suite, so it keeps Spark's default compilers (C2): the C1-only
    # setting of `dev.sh test` (PYSPARK_SUBMIT_ARGS) is for the JVMs that tests start and stop.
    started_args = os.environ.get("PYSPARK_SUBMIT_ARGS")
    if os.environ.get("SQL_EXT_TEST_SESSION_ARGS"):
        os.environ["PYSPARK_SUBMIT_ARGS"] = os.environ["SQL_EXT_TEST_SESSION_ARGS"]
    try:
        session = sql_ext.session(warehouse=warehouse, conf={
            "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g",
            # Interpreted, not generated code: the tests' inputs are a few rows, where
            # compiling each new plan's Java (Janino, then the JIT) costs more than it saves
            # (15-17 % of a streaming module's time). The generated paths stay checked: every
            # server and driver the tests start runs Spark's defaults, and the JVM suite holds
            # each sql-ext expression with code of its own to both modes (CodegenModesSuite).
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.codegen.factoryMode": "NO_CODEGEN"})
    finally:
        if started_args is not None:
            os.environ["PYSPARK_SUBMIT_ARGS"] = started_args
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def thrift_server(pytestconfig):
    """The run's shared `sql-ext thriftserver` (its own warehouse; the UDAFs of
    tests/udafs/team_aggregates.py for every connection, --udafs): its port."""
    return pytestconfig.sql_ext_shared.get("thrift").wait()


@pytest.fixture(scope="session")
def thrift_ui(pytestconfig, thrift_server):
    """The shared Thrift server's Spark UI (`--ui-port`): its port and the server's log."""
    server = pytestconfig.sql_ext_shared.get("thrift")
    return SimpleNamespace(port=server.ui_port, log=server.log)


@pytest.fixture
def jdbc(thrift_server, request):
    """A database of the test's own on the shared Thrift server: `connect()` opens a PyHive
    connection whose current database it is."""
    from pyhive import hive

    database = "t_" + re.sub(r"\W", "_", request.node.name.lower())[:40] + "_" + \
        uuid.uuid4().hex[:6]
    with hive.connect(host="127.0.0.1", port=thrift_server) as conn:
        conn.cursor().execute(f"CREATE DATABASE {database}")
    return SimpleNamespace(port=thrift_server, database=database, connect=functools.partial(
        hive.connect, host="127.0.0.1", port=thrift_server, database=database))


@pytest.fixture(scope="session")
def secured_server(tmp_path_factory):
    """The security suite's signed-in Thrift server (tests/secured.py), started once for the
    modules of the xdist group "secured_server": (port, its work folder)."""
    import secured
    from test_catalog import _kill

    work = tmp_path_factory.mktemp("secured")
    process, port = secured.start(work)
    yield port, work
    _kill(process, port)


@pytest.fixture(scope="session")
def connect_server(pytestconfig):
    """The run's shared `sql-ext connect-server --auth token`: its port, token, log and
    warehouse."""
    server = pytestconfig.sql_ext_shared.get("connect")
    return SimpleNamespace(port=server.wait(), token=CONNECT_TOKEN, log=server.log,
                           warehouse=server.folder / "warehouse")


@pytest.fixture(scope="session")
def kafka(pytestconfig):
    """The run's shared Kafka broker on 127.0.0.1 (tests/kafka_broker.py): its bootstrap
    address. Each test writes topics of its own."""
    return f"127.0.0.1:{pytestconfig.sql_ext_shared.get('kafka').wait()}"


@pytest.fixture(scope="session")
def kafka_sasl(pytestconfig, kafka):
    """The shared broker's SASL listeners, SASL_PLAINTEXT and SASL_SSL with SCRAM-SHA-256 and
    -512 (tests/kafka_broker.py `listeners`): their addresses, the user and password, the
    PKCS#12 trust store and its password. Same broker, same topics as `kafka`."""
    from kafka_broker import listeners

    from sql_ext.server.thrift import wait_for_port

    found = listeners(pytestconfig.sql_ext_shared.get("kafka").folder / "data")
    for address in found["listeners"].values():
        host, port = address.rsplit(":", 1)
        wait_for_port(host, int(port), timeout=60)
    return found


class _ModuleTimes:
    """Each test's setup, call and teardown time, summed by module, printed at the end of the
    run (on the controller, where the workers' reports arrive)."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.started = time.monotonic()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        self.seconds[report.nodeid.split("::")[0]] += report.duration

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter):
        if not self.seconds:
            return
        total = sum(self.seconds.values())
        terminalreporter.write_sep("=", "time per test module (setup + call + teardown)")
        for module, seconds in sorted(self.seconds.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{seconds:8.1f} s {100 * seconds / total:5.1f} %  "
                                        f"{module}")
        terminalreporter.write_line(f"{total:8.1f} s in tests; "
                                    f"{time.monotonic() - self.started:.1f} s of wall clock")
