"""A real Apache Kafka broker for the tests (KRaft: broker and controller in one process), on
127.0.0.1, from Maven Central jars resolved with the Ivy jar pyspark ships, cached under the
project folder (.cache/kafka) so later runs work offline. Started and stopped by pid.

The broker's runtime jars (45, 43 MB) resolve once, under a lock (two test workers may ask at
once); `python tests/kafka_broker.py` resolves them ahead (`dev.sh test` does). The broker
listens within seconds of its start."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

KAFKA = ("org.apache.kafka", "kafka_2.13", "4.1.1")
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "kafka"
# The broker's runtime jars only (no log binding: it runs quietly, and is ready when it listens).
IVY_XML = f"""<ivy-module version="2.0">
  <info organisation="sqlext" module="kafka-broker"/>
  <dependencies>
    <dependency org="{KAFKA[0]}" name="{KAFKA[1]}" rev="{KAFKA[2]}"
                conf="default->master(*),runtime(*)"/>
  </dependencies>
</ivy-module>
"""
LEFT_OUT = ("-sources", "-javadoc", "-test-", "log4j-to-slf4j")


def classpath() -> str:
    lib = CACHE / "lib"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = CACHE / "resolved"
        if not marker.is_file() or marker.read_text() != IVY_XML:
            shutil.rmtree(lib, ignore_errors=True)
            (CACHE / "ivy.xml").write_text(IVY_XML)
            ivy = Path(pyspark.__file__).parent / "jars" / "ivy-2.5.3.jar"
            subprocess.run(["java", "-jar", str(ivy), "-ivy", str(CACHE / "ivy.xml"),
                            "-retrieve", f"{lib}/[artifact]-[revision](-[classifier]).[ext]",
                            "-confs", "default", "-cache", str(CACHE / "ivy-cache")],
                           check=True, capture_output=True, timeout=900)
            marker.write_text(IVY_XML)
    return ":".join(str(j) for j in sorted(lib.glob("*.jar"))
                    if not any(part in j.name for part in LEFT_OUT))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """One broker in `folder`; `bootstrap` is its address."""

    def __init__(self, folder: Path, port: int | None = None, own_group: bool = True):
        """`own_group`: the broker's JVM in a process group of its own (else in this
        process's, which a signal to the group then stops with it)."""
        self.folder, self.own_group = folder, own_group
        self.port, controller = port or _free_port(), _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        (folder / "data").mkdir(parents=True, exist_ok=True)
        self.properties = folder / "server.properties"
        self.properties.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{controller}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={folder / 'data'}", "num.partitions=4",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0"]) + "\n")
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> Broker:
        cp = classpath()
        subprocess.run(["java", "-cp", cp, "kafka.tools.StorageTool", "format", "-t",
                        "sqlextTestCluster0001a", "-c", str(self.properties)],
                       check=True, capture_output=True, timeout=120)
        with open(self.folder / "broker.log", "w") as log:
            self.process = subprocess.Popen(
                ["java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
                 "kafka.Kafka", str(self.properties)], stdout=log, stderr=subprocess.STDOUT,
                start_new_session=self.own_group)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited: {self.folder / 'broker.log'}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"the Kafka broker did not listen within {timeout} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait()

    def _signal(self, sig: int) -> None:
        if self.own_group:
            os.killpg(self.process.pid, sig)
        else:
            self.process.send_signal(sig)


def serve(port: int, folder: Path | None = None) -> None:
    """A broker on 127.0.0.1:`port` until Ctrl-C or SIGTERM (`bash python/dev.sh kafka`; the
    tests' shared broker, tests/shared_servers.py), its data in `folder` or a temporary
    one: to try the Kafka example without a Kafka of one's own. The broker's JVM shares this
    process's group, so a signal to the group stops both."""
    import tempfile

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    temporary = folder is None
    folder = folder or Path(tempfile.mkdtemp(prefix="sql_ext_kafka_"))
    broker = Broker(folder, port, own_group=False).start()
    print(f"Kafka broker on {broker.bootstrap} (data in {broker.folder}); Ctrl-C stops it",
          flush=True)
    try:
        broker.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
        if temporary:
            shutil.rmtree(broker.folder, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[2]) if len(sys.argv) > 2 else 9092,
              Path(sys.argv[3]) if len(sys.argv) > 3 else None)
    else:
        print(f"{len(classpath().split(':'))} Kafka broker jars in {CACHE / 'lib'}")
