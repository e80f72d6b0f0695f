"""A real Apache Kafka broker for the tests (KRaft: broker and controller in one process), on
127.0.0.1, from Maven Central jars resolved with the Ivy jar pyspark ships, cached under the
project folder (.cache/kafka) so later runs work offline. Started and stopped by pid.

Besides PLAINTEXT, the broker listens as production clusters do, for clients that sign in:
SASL_PLAINTEXT and SASL_SSL, both with SCRAM-SHA-256 and SCRAM-SHA-512 for one user
(`SASL_USER`, `SASL_PASSWORD`: its SCRAM credentials are written into the cluster's metadata as
the storage is formatted, so no second step or ZooKeeper is needed). SASL_SSL presents a
certificate for 127.0.0.1 signed by a certificate authority made at the start (elliptic-curve
keys: milliseconds), which clients trust through a PKCS#12 trust store with a password. Where
they are is in `<folder>/listeners.json` (`listeners(folder)`). The extra listeners add no
process, and under a second to the broker's start (which runs in the background while the
test session starts).

The broker's runtime jars (45, 43 MB) resolve once, under a lock (two test workers may ask at
once); `python tests/kafka_broker.py` resolves them ahead (`dev.sh test` does). The broker
listens within seconds of its start."""

from __future__ import annotations

import fcntl
import json
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
# The one SASL user of the SASL listeners (SCRAM-SHA-256 and SCRAM-SHA-512).
SASL_USER, SASL_PASSWORD = "streams", "kafka-s3cret-for-tests"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
TRUSTSTORE_PASSWORD = "trust-store-pw"


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


def _certificates(folder: Path) -> tuple[str, str]:
    """A certificate authority and a certificate for 127.0.0.1 (and localhost) it signed, made
    now: the broker's key and certificate chain as PEM text; the CA's certificate in
    `folder`/ca.pem and in a PKCS#12 trust store `folder`/truststore.p12 (password
    TRUSTSTORE_PASSWORD), as a cluster's operator hands them to clients."""
    from certificates import certificate
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12

    folder.mkdir(parents=True, exist_ok=True)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    issuer = "sql-ext test Kafka CA"
    ca = certificate(issuer, issuer, ca_key.public_key(), ca_key, True, days=30)
    broker = certificate("127.0.0.1", issuer, key.public_key(), ca_key, False, days=30)
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "truststore.p12").write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"ca")],
        serialization.BestAvailableEncryption(TRUSTSTORE_PASSWORD.encode())))
    private = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return private, (broker.public_bytes(pem) + ca.public_bytes(pem)).decode()


def _property(text: str) -> str:
    """`text` as a value in a .properties file (its line breaks escaped)."""
    return text.strip().replace("\\", "\\\\").replace("\n", "\\n")


class Broker:
    """One broker in `folder`; `bootstrap` is its PLAINTEXT address, `listeners` its address
    for each security protocol."""

    def __init__(self, folder: Path, port: int | None = None, own_group: bool = True):
        """`own_group`: the broker's JVM in a process group of its own (else in this
        process's, which a signal to the group then stops with it)."""
        self.folder, self.own_group = folder, own_group
        self.port, controller = port or _free_port(), _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.listeners = {"PLAINTEXT": self.bootstrap,
                          "SASL_PLAINTEXT": f"127.0.0.1:{_free_port()}",
                          "SASL_SSL": f"127.0.0.1:{_free_port()}"}
        (folder / "data").mkdir(parents=True, exist_ok=True)
        key, chain = _certificates(folder / "tls")
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        self.properties = folder / "server.properties"
        self.properties.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{controller}",
            "listeners=" + ",".join(f"{p}://{a}" for p, a in self.listeners.items())
            + f",CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners=" + ",".join(f"{p}://{a}" for p, a in self.listeners.items()),
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
            f"sasl.enabled.mechanisms={','.join(SCRAM_MECHANISMS)}",
            *(f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config={scram}"
              for listener in ("sasl_plaintext", "sasl_ssl") for mechanism in SCRAM_MECHANISMS),
            "listener.name.sasl_ssl.ssl.keystore.type=PEM",
            f"listener.name.sasl_ssl.ssl.keystore.key={_property(key)}",
            f"listener.name.sasl_ssl.ssl.keystore.certificate.chain={_property(chain)}",
            f"log.dirs={folder / 'data'}", "num.partitions=4",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0"]) + "\n")
        (folder / "listeners.json").write_text(json.dumps({
            "listeners": self.listeners, "user": SASL_USER, "password": SASL_PASSWORD,
            "mechanisms": list(SCRAM_MECHANISMS),
            "truststore": str(folder / "tls" / "truststore.p12"),
            "truststore_password": TRUSTSTORE_PASSWORD, "ca": str(folder / "tls" / "ca.pem")}))
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> Broker:
        cp = classpath()
        scram = [arg for mechanism in SCRAM_MECHANISMS for arg in (
            "--add-scram", f"{mechanism}=[name={SASL_USER},password={SASL_PASSWORD}]")]
        subprocess.run(["java", "-cp", cp, "kafka.tools.StorageTool", "format", "-t",
                        "sqlextTestCluster0001a", "-c", str(self.properties), *scram],
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
                for address in self.listeners.values():  # all of them, as clients may
                    host, port = address.rsplit(":", 1)
                    socket.create_connection((host, int(port)), timeout=1).close()
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


def listeners(folder: Path) -> dict:
    """What a broker in `folder` listens on and how its SASL listeners are signed in to
    (written by `Broker`): `listeners` (security protocol -> host:port), `user`, `password`,
    `mechanisms`, `truststore` (PKCS#12) and `truststore_password`, `ca` (PEM)."""
    return json.loads((folder / "listeners.json").read_text())


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
    print(f"  SASL_PLAINTEXT on {broker.listeners['SASL_PLAINTEXT']}, SASL_SSL on "
          f"{broker.listeners['SASL_SSL']} (SCRAM user {SASL_USER}, password {SASL_PASSWORD}; "
          f"trust store {broker.folder / 'tls' / 'truststore.p12'}, password "
          f"{TRUSTSTORE_PASSWORD})", flush=True)
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
