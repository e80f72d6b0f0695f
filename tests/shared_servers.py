"""Servers that the whole test run shares (not a test): one `sql-ext thriftserver`, one
`sql-ext connect-server` and one Kafka broker for every worker, each started once, in the
background, as soon as a worker's collection shows that some test will use it, and stopped by
process group when the run ends (tests/conftest.py wires this).

A server is a record in the run's folder (`<name>.json`: its process group, port and log). The
first worker to need a server starts it under a file lock; the others find the record. Tests on
a shared server keep to names of their own (a database, a schema, a topic), so that what one
leaves behind cannot change another's result.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sql_ext.server.thrift import free_port, wait_for_port

TESTS = Path(__file__).resolve().parent
# The token of the shared Connect server (clients put it in their sc:// address).
CONNECT_TOKEN = "s3cret-token-for-tests"


@dataclass(frozen=True)
class Server:
    name: str
    pid: int
    port: int
    folder: Path
    ui_port: int | None = None  # the Thrift server's Spark UI (and Prometheus metrics)

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def wait(self, timeout: float = 300) -> int:
        """The port, once the server listens; its log's end if it never does."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                wait_for_port("127.0.0.1", self.port, timeout=5)
                return self.port
            except TimeoutError:
                if not _alive(self.pid) or time.monotonic() > deadline:
                    text = self.log.read_text(errors="replace") if self.log.is_file() else ""
                    raise AssertionError(f"the shared {self.name} server never listened on "
                                         f"{self.port}:\n{text[-4000:]}") from None


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _commands(name: str, folder: Path, port: int, ui_port: int | None) -> tuple[list[str], dict]:
    """The command line and environment of the shared server `name`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(TESTS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    cli = [sys.executable, "-m", "sql_ext.cli"]
    if name == "thrift":  # the UDAFs of tests/udafs/team_aggregates.py for every connection
        # Its Spark UI serves the monitoring test (tests/test_monitoring.py).
        return [*cli, "thriftserver", "--port", str(port), "--warehouse",
                str(folder / "warehouse"), "--udafs", "udafs.team_aggregates",
                "--ui-port", str(ui_port)], env
    if name == "connect":
        env["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = CONNECT_TOKEN
        return [*cli, "connect-server", "--port", str(port), "--warehouse",
                str(folder / "warehouse"), "--auth", "token"], env
    if name == "kafka":
        return [sys.executable, str(TESTS / "kafka_broker.py"), "serve", str(port),
                str(folder / "data")], env
    raise KeyError(name)


class SharedServers:
    """The run's shared servers, recorded in `folder` (the same for every worker)."""

    NAMES = ("thrift", "connect", "kafka")

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def _record(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def start(self, name: str) -> Server:
        """Starts `name` unless a worker already did; does not wait for it to listen."""
        with open(self.folder / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            record = self._record(name)
            if record.is_file():
                return self._read(record)
            folder = self.folder / name
            folder.mkdir(exist_ok=True)
            port = free_port()
            ui_port = free_port() if name == "thrift" else None
            command, env = _commands(name, folder, port, ui_port)
            with open(folder / "server.log", "w") as log:
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                           cwd=folder, env=env, start_new_session=True)
            server = Server(name, process.pid, port, folder, ui_port)
            record.write_text(json.dumps({"pid": process.pid, "port": port,
                                          "folder": str(folder), "ui_port": ui_port}))
            return server

    def _read(self, record: Path) -> Server:
        data = json.loads(record.read_text())
        return Server(record.stem, data["pid"], data["port"], Path(data["folder"]),
                      data["ui_port"])

    def get(self, name: str) -> Server:
        """The running server `name`, started now if no worker has."""
        return self.start(name)

    def stop_all(self) -> None:
        """SIGTERM to every recorded server's process group, SIGKILL to what is left."""
        pids = [self._read(r).pid for r in self.folder.glob("*.json")]
        for pid in pids:
            _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in pids:
            _signal_group(pid, signal.SIGKILL)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except OSError:
        pass
