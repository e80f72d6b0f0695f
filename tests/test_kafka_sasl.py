"""Kafka in production: topic tables that sign in to the broker (SASL SCRAM over plain TCP and
over TLS), against the run's shared broker's SASL listeners (tests/kafka_broker.py, the
`kafka_sasl` fixture), and where such a table's secrets go.

Messages are sent through the broker's PLAINTEXT listener with another client
(tests/kafka_messages.py) and read by Spark through a SASL listener of the same broker. The
secrets: what a user who is not an admin, and an admin, sees of a SASL topic table and of a
streaming table over it on the security suite's signed-in Thrift server (tests/secured.py),
and what the catalog keeps when the password comes from a file (Kafka's config providers) or
from the server's environment (Spark's `${env:...}`)."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_messages import create_topic, produce
from secured import as_user, refused, run
from sql_ext.streaming import stream_status
from sql_ext.streaming.runs import latest, named_entry

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
# What the Kafka client answers a wrong password with (kafka-clients 3.9.2, Spark's).
WRONG_PASSWORD = ("SaslAuthenticationException: Authentication failed during authentication "
                  "due to invalid credentials with SASL mechanism {mechanism}")
REDACTED = "*********(redacted)"


def _jaas(user: str, password: str) -> str:
    return f'{SCRAM_MODULE} required username="{user}" password="{password}";'


def _name(stem: str) -> str:
    return f"{stem}_{uuid.uuid4().hex[:8]}"


def _options(sasl: dict, topic: str, protocol: str, mechanism: str, password: str | None = None,
             **more: str) -> dict:
    """A topic table's options that sign in on the broker's `protocol` listener; over TLS the
    broker's certificate is checked against the PKCS#12 trust store (with its password)."""
    options = {"kafka.bootstrap.servers": sasl["listeners"][protocol], "subscribe": topic,
               "format": "json", "kafka.security.protocol": protocol,
               "kafka.sasl.mechanism": mechanism,
               "kafka.sasl.jaas.config": _jaas(sasl["user"], password or sasl["password"])}
    if protocol == "SASL_SSL":
        options.update({"kafka.ssl.truststore.location": sasl["truststore"],
                        "kafka.ssl.truststore.type": "PKCS12",
                        "kafka.ssl.truststore.password": sasl["truststore_password"]})
    return options | more


def _create_sql(name: str, options: dict) -> str:
    return (f"CREATE TABLE {name} (id BIGINT, k STRING) USING kafka OPTIONS ("
            + ", ".join(f"'{k}' = '{v}'" for k, v in options.items()) + ")")


def _messages(first: int, last: int) -> list:
    return [("abc"[i % 3], {"id": i, "k": "abc"[i % 3]}) for i in range(first, last)]


# One row per message (a COUNT(1) window per key): the streaming table holds every id it read.
EVERY_MESSAGE = "SELECT k, MAX(id) AS id FROM STREAM({source}) WINDOW TUMBLING COUNT(1) " \
                "OVER (PARTITION BY k)"


def _ids(spark, table: str) -> list[int]:
    return sorted(r.id for r in spark.table(table).collect())


def _catalog_options(spark, name: str) -> dict:
    """The options as the catalog keeps them (what an admin of the metastore's database reads
    there), not as SHOW statements display them."""
    table = spark._jsparkSession.sessionState().catalog().getTableMetadata(
        spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier(name))
    entries = table.storage().properties().iterator()
    kept = {}
    while entries.hasNext():
        entry = entries.next()
        kept[entry._1()] = entry._2()
    return kept


def test_a_streaming_table_reads_a_topic_through_a_sasl_listener(spark, kafka, kafka_sasl):
    """SCRAM-SHA-512 over TLS, the broker's certificate checked against a PKCS#12 trust store:
    the streaming table gets every message. (SASL_PLAINTEXT with SCRAM-SHA-256: the batch reads
    of test_a_password_from_a_file_stays_out_of_the_catalog.) Its default trigger, AVAILABLE
    NOW, reads what the topic holds and stops (SHOW STREAMS: STOPPED); later messages wait for
    REFRESH. Where the stream stands against the topic is in its progress (`endOffset` against
    `latestOffset`; Spark's V1 Kafka source reports no `metrics` such as
    avgOffsetsBehindLatest) and in its checkpoint's offsets log."""
    topic = _name("sasl")
    create_topic(kafka, topic, 1)
    produce(kafka, topic, _messages(0, 10))
    table, stream = _name("kt_sasl"), _name("ks_sasl")
    spark.sql(_create_sql(table, _options(kafka_sasl, topic, "SASL_SSL", "SCRAM-SHA-512",
                                          maxOffsetsPerTrigger="6")))
    spark.sql(f"CREATE STREAMING TABLE {stream} AS " + EVERY_MESSAGE.format(source=table))
    assert _ids(spark, stream) == list(range(10))
    status = stream_status(spark, stream)
    assert (status["state"], status["trigger"]) == ("STOPPED", "AVAILABLE NOW")
    produce(kafka, topic, _messages(10, 15))
    assert _ids(spark, stream) == list(range(10))  # nothing runs it until REFRESH
    # Progress of the pass (micro-batches of at most 6 messages): how far each batch read,
    # and the topic's end when it was planned.
    query = latest(spark, named_entry(spark, stream, "progress")).query
    assert query.name == f"default.{stream}"  # as spark.streams.active lists it while it runs
    progress = [p["sources"][0] for p in query.recentProgress]
    assert [(json.loads(p["endOffset"])[topic]["0"], json.loads(p["latestOffset"])[topic]["0"])
            for p in progress] == [(6, 10), (10, 10)]
    assert all(p["metrics"] == {} for p in progress)
    spark.sql(f"REFRESH STREAMING TABLE {stream}")
    assert _ids(spark, stream) == list(range(15))
    # The checkpoint's newest offsets file ends with the offsets its batch reads up to.
    offsets = Path(status["checkpoint"].removeprefix("file:")) / "offsets"
    newest = max((f for f in offsets.iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
    assert json.loads(newest.read_text().splitlines()[-1]) == {topic: {"0": 15}}
    spark.sql(f"DROP STREAMING TABLE {stream}")
    spark.sql(f"DROP TABLE {table}")


def test_a_wrong_password_is_named(spark, kafka, kafka_sasl):
    """A batch read fails with the Kafka client's answer; a streaming table's stream fails, and
    SHOW STREAMS keeps it FAILED with that answer as its last error."""
    topic = _name("sasl_bad")
    create_topic(kafka, topic, 1)
    produce(kafka, topic, _messages(0, 3))
    table, stream = _name("kt_bad"), _name("ks_bad")
    # One attempt to list the topic's offsets, not Spark's three: the answer does not change.
    spark.sql(_create_sql(table, _options(kafka_sasl, topic, "SASL_SSL", "SCRAM-SHA-512",
                                          password="not-the-password",
                                          **{"fetchOffset.numRetries": "1"})))
    expected = WRONG_PASSWORD.format(mechanism="SCRAM-SHA-512")
    with pytest.raises(Exception, match=re.escape(expected)):
        spark.table(table).collect()
    with pytest.raises(Exception, match=re.escape(expected)):
        spark.sql(f"CREATE STREAMING TABLE {stream} AS " + EVERY_MESSAGE.format(source=table))
    status = stream_status(spark, stream)
    assert status["state"] == "FAILED"
    # (As the failure reaches the catalog first, the error is the Kafka client's alone or
    # wrapped in an ExecutionException: the line with the client's answer is in both.)
    assert f"org.apache.kafka.common.errors.{expected}" in status["last_error"]
    assert "not-the-password" not in status["last_error"]
    spark.sql(f"DROP STREAMING TABLE {stream}")
    spark.sql(f"DROP TABLE {table}")


def test_a_password_from_a_file_stays_out_of_the_catalog(spark, kafka, kafka_sasl, tmp_path):
    """Kafka's FileConfigProvider: the table's options name a properties file on the server and
    a key in it, the Kafka client reads the password from there as it connects, and the
    catalog keeps only the reference. Spark's variables, `${env:NAME}` and `${system:NAME}`,
    by contrast, are replaced in the statement's text before it runs: the catalog keeps the
    password itself."""
    topic = _name("sasl_file")
    create_topic(kafka, topic, 1)
    produce(kafka, topic, _messages(0, 4))
    secrets = tmp_path / "kafka-client.properties"
    secrets.write_text(f"username={kafka_sasl['user']}\npassword={kafka_sasl['password']}\n"
                       f"truststore.password={kafka_sasl['truststore_password']}\n")
    secrets.chmod(0o600)
    filed = _name("kt_file")
    spark.sql(_create_sql(filed, _options(
        kafka_sasl, topic, "SASL_SSL", "SCRAM-SHA-512", **{
            "kafka.config.providers": "file",
            "kafka.config.providers.file.class":
                "org.apache.kafka.common.config.provider.FileConfigProvider",
            "kafka.sasl.jaas.config": _jaas(f"${{file:{secrets}:username}}",
                                            f"${{file:{secrets}:password}}"),
            "kafka.ssl.truststore.password": f"${{file:{secrets}:truststore.password}}"})))
    assert sorted(r.id for r in spark.table(filed).collect()) == list(range(4))
    kept = _catalog_options(spark, filed)
    assert kept["kafka.sasl.jaas.config"] == _jaas(f"${{file:{secrets}:username}}",
                                                   f"${{file:{secrets}:password}}")
    assert kafka_sasl["password"] not in str(kept)
    assert kafka_sasl["truststore_password"] not in str(kept)
    # Spark's variables: the driver JVM's environment (as it was when the JVM started, so
    # HOME here) and its system properties (set now), substituted into the text.
    system = spark._jvm.java.lang.System
    system.setProperty("sqlext.test.kafka.password", kafka_sasl["password"])
    from_env = _name("kt_env")
    try:
        spark.sql(_create_sql(from_env, _options(
            kafka_sasl, topic, "SASL_PLAINTEXT", "SCRAM-SHA-256",
            password="${system:sqlext.test.kafka.password}",
            **{"kafka.client.id": "${env:HOME}"})))
    finally:
        system.clearProperty("sqlext.test.kafka.password")
    assert sorted(r.id for r in spark.table(from_env).collect()) == list(range(4))
    kept = _catalog_options(spark, from_env)
    assert kept["kafka.sasl.jaas.config"] == _jaas(kafka_sasl["user"], kafka_sasl["password"])
    assert kept["kafka.client.id"] == os.environ["HOME"]
    for table in (filed, from_env):
        spark.sql(f"DROP TABLE {table}")


def test_offsets_that_retention_removed_fail_the_stream_unless_told(spark, kafka):
    """A stopped stream's next offsets deleted from the topic (as retention does): with
    failOnDataLoss (the default) its next pass fails and SHOW STREAMS shows it FAILED, its table
    unchanged; with 'failOnDataLoss' = 'false' it goes on from the first offset Kafka still
    holds, and the deleted messages are never read. The failed one goes on so too once its
    topic table is created again with that option."""
    topic = _name("retention")
    create_topic(kafka, topic, 1)
    produce(kafka, topic, _messages(0, 20))
    streams = {}
    for loses in (False, True):
        table, stream = _name("kt_ret"), _name("ks_ret")
        more = {"failOnDataLoss": "false"} if loses else {}
        spark.sql(_create_sql(table, {"kafka.bootstrap.servers": kafka, "subscribe": topic,
                                      **more}))
        spark.sql(f"CREATE STREAMING TABLE {stream} AS " + EVERY_MESSAGE.format(source=table))
        assert _ids(spark, stream) == list(range(20))
        streams[loses] = (table, stream)
    produce(kafka, topic, _messages(20, 30))
    admin = AdminClient({"bootstrap.servers": kafka})  # held: its futures need it alive
    deleted = admin.delete_records([TopicPartition(topic, 0, 25)])
    assert [f.result(60).low_watermark for f in deleted.values()] == [25]
    table, stream = streams[False]
    with pytest.raises(Exception, match=r"OffsetOutOfRangeException: Fetch position "
                                        r"FetchPosition\{offset=20,.* is out of range"):
        spark.sql(f"REFRESH STREAMING TABLE {stream}")
    status = stream_status(spark, stream)
    assert status["state"] == "FAILED" and "is out of range for partition" in \
        status["last_error"], status["last_error"]
    assert _ids(spark, stream) == list(range(20))
    for loses in (True, False):
        table, stream = streams[loses]
        if not loses:  # the failed one: its topic table again, with the option
            spark.sql(f"DROP TABLE {table}")
            spark.sql(_create_sql(table, {"kafka.bootstrap.servers": kafka,
                                          "subscribe": topic, "failOnDataLoss": "false"}))
        spark.sql(f"REFRESH STREAMING TABLE {stream}")
        assert _ids(spark, stream) == list(range(20)) + list(range(25, 30))
        assert stream_status(spark, stream)["state"] == "STOPPED"
    for table, stream in streams.values():
        spark.sql(f"DROP STREAMING TABLE {stream}")
        spark.sql(f"DROP TABLE {table}")


# ---- On the signed-in server: dan is not an admin, root is. ----

def _client_key() -> tuple[str, str]:
    """A client's private key and its (self-signed) certificate, PEM, for mutual TLS."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    client = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sql-ext streams")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(client).issuer_name(client)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                   .sign(key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode(),
            certificate.public_bytes(pem).decode())


@pytest.fixture(scope="module")
def served(secured_server, kafka, kafka_sasl):
    """On the signed-in server, an admin's SASL_SSL topic table in dan's database, its SCRAM
    password and trust store password inline, and a client key for TLS given inline too
    (PEM); dan's streaming table over it. What each statement that shows a table's definition
    answers dan and root."""
    port, _ = secured_server
    root, dan = as_user(port, "root"), as_user(port, "dan")
    run(dan, "CREATE DATABASE IF NOT EXISTS dan_db")
    topic = _name("sasl_served")
    create_topic(kafka, topic, 2)
    produce(kafka, topic, _messages(0, 6))
    key, certificate = _client_key()
    table, stream = f"dan_db.{_name('kt')}", f"dan_db.{_name('ks')}"
    run(root, _create_sql(table, _options(
        kafka_sasl, topic, "SASL_SSL", "SCRAM-SHA-512", **{
            "kafka.ssl.keystore.type": "PEM", "kafka.ssl.keystore.key": key,
            "kafka.ssl.keystore.certificate.chain": certificate})))
    # dan reads the admin's table (SELECT on it is enough) through a stream of his own.
    run(dan, f"CREATE STREAMING TABLE {stream} AS " + EVERY_MESSAGE.format(source=table))
    assert sorted(r[1] for r in run(dan, f"SELECT * FROM {stream}")) == list(range(6))
    database, name = table.split(".")
    statements = [
        "SHOW STREAMS", f"SHOW CREATE TABLE {table}", f"DESCRIBE TABLE EXTENDED {table}",
        f"DESCRIBE TABLE EXTENDED {table} AS JSON", f"SHOW TBLPROPERTIES {table}",
        f"SHOW TBLPROPERTIES {table} ('option.kafka.sasl.jaas.config')",
        f"SHOW TABLE EXTENDED IN {database} LIKE '{name}'",
        f"DESCRIBE TABLE EXTENDED {stream}", f"SHOW TBLPROPERTIES {stream}",
        f"SHOW TABLE EXTENDED IN {database} LIKE '{stream.split('.')[1]}'",
        f"EXPLAIN EXTENDED SELECT * FROM {table}"]
    shown = {user: {statement: str(run(cursor, statement)) for statement in statements}
             for user, cursor in (("dan", dan), ("root", root))}
    yield dict(table=table, stream=stream, key=key, shown=shown)
    run(dan, f"DROP STREAMING TABLE {stream}")
    run(root, f"DROP TABLE {table}")


@pytest.mark.xdist_group("secured_server")
def test_no_user_sees_a_sasl_topic_table_s_passwords(served, kafka_sasl):
    """Every statement that shows a table's definition, for a user who is not an admin and for
    an admin: the SASL password and the trust store's password read as redacted; the rest of
    the connection (address, protocol, mechanism, trust store's path) shows."""
    table, stream = served["table"], served["stream"]
    for user, shown in served["shown"].items():
        for statement, answer in shown.items():
            assert kafka_sasl["password"] not in answer, (user, statement, answer)
            assert kafka_sasl["truststore_password"] not in answer, (user, statement, answer)
        created = shown[f"SHOW CREATE TABLE {table}"]
        assert f"'kafka.sasl.jaas.config' = '{REDACTED}'" in created, (user, created)
        assert f"'kafka.ssl.truststore.password' = '{REDACTED}'" in created, (user, created)
        assert kafka_sasl["truststore"] in created and "SCRAM-SHA-512" in created
        assert shown[f"SHOW TBLPROPERTIES {table} ('option.kafka.sasl.jaas.config')"] == \
            str([("option.kafka.sasl.jaas.config", REDACTED)])
        assert stream in shown["SHOW STREAMS"]


@pytest.mark.xdist_group("secured_server")
def test_no_user_sees_a_topic_table_s_private_key(served):
    """A client key for TLS given inline ('kafka.ssl.keystore.key', PEM, with its certificate
    chain), as Kafka allows: it is a secret as a password is, and should read as redacted to a
    user who is not an admin."""
    marker = served["key"].splitlines()[1]  # a line of the key's own text
    leaks = [statement for statement, answer in served["shown"]["dan"].items()
             if marker in answer]
    assert not leaks, f"dan, who is not an admin, reads the private key through {leaks}"


@pytest.mark.xdist_group("secured_server")
def test_a_user_reads_nothing_of_the_server_s_environment_through_variables(secured_server):
    """Spark replaces `${env:NAME}` and `${system:NAME}` in a statement's text with the server
    process's environment variable or Java system property before it runs, where an operator
    keeps secrets (a Kafka password, SQL_EXT_METASTORE_PASSWORD). A user who is not an admin
    is refused such a statement, in any spelling; an admin (the operator) is not. The server
    inherits this test run's environment, so PATH is known here."""
    port, _ = secured_server
    dan = as_user(port, "dan")
    for sql in ("SELECT '${env:PATH}'", "SELECT '${system:user.dir}'",
                "SELECT '${ ENV :PATH}'", "SELECT 1 AS `${env:PATH}`"):
        message = refused(dan, sql, "settings", "dan", "environment variables")
        assert os.environ["PATH"] not in message, message
    # Spark's own ${var} substitution stays for everyone; the operator may read the server.
    assert run(dan, "SELECT '${spark:spark.sqlext.probe.origin}'") == [("conf",)]
    assert run(as_user(port, "root"), "SELECT '${env:PATH}'") == [(os.environ["PATH"],)]