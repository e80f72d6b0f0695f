"""Least privilege on `sql-ext connect-server --auth token --users FILE`: each user has a token
of their own (`sql-ext connect-token FILE USER`), and who a client is comes from that token,
never from the user_id it claims. A user who is not an admin is held to the checks of the
Thrift server (rules jvm, code, settings, paths and the access rules' tables) for the SQL and
DataFrame plans they send, and to what never reaches a plan's analysis: settings through the
config API, client code (Python UDFs, artifacts) and the catalog API's listings. An admin may
do all of it. After each refusal the client's session goes on and no table changed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from secured import SECRET_SETTING
from test_catalog import _kill

from sql_ext.server.thrift import free_port, wait_for_port

TESTS = Path(__file__).resolve().parent
RULES = {"tables": [
    {"user": "ann", "database": "sales", "table": "cards", "privileges": ["SELECT"],
     "filter": "region = 'EU'",
     "columns": [{"name": "card", "mask": "'XX'"}, {"name": "ssn", "allow": False}]},
    {"user": "ann", "database": "sales", "privileges": ["SELECT", "INSERT"]},
    {"user": "ann", "database": "scratch", "privileges": ["OWNERSHIP"]}]}

# Two servers of their own, a minute or more each: started early, on one worker.
pytestmark = [pytest.mark.xdist_group("connect_access"), pytest.mark.heavy]


def _cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "sql_ext.cli", *args], capture_output=True,
                          text=True, timeout=120, **kwargs)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Connect server with a token per user (ann; root, an admin) and access rules: ann
    reads and appends to the database sales and owns scratch. (port, tokens, folder)"""
    work = tmp_path_factory.mktemp("connect access")  # a folder with a space
    tokens = {}
    for user in ("ann", "root"):
        made = _cli("connect-token", str(work / "team.tokens"), user)
        assert made.returncode == 0, made.stderr
        tokens[user] = made.stdout.split("token=")[-1].strip()
    assert oct((work / "team.tokens").stat().st_mode & 0o777) == "0o600"
    assert all(token not in (work / "team.tokens").read_text() for token in tokens.values())
    (work / "rules.json").write_text(json.dumps(RULES))
    # The operator's settings, a secret among them (tests/secured.py's).
    (work / "spark.properties").write_text(f"{SECRET_SETTING[0]} {SECRET_SETTING[1]}\n")
    port = free_port()
    with open(work / "server.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "sql_ext.cli", "connect-server", "--port", str(port),
             "--warehouse", str(work / "warehouse"), "--auth", "token",
             "--users", str(work / "team.tokens"), "--admin", "root",
             "--access-rules", str(work / "rules.json"),
             "--properties-file", str(work / "spark.properties")],
            stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True,
            env={k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"})
    wait_for_port("127.0.0.1", port, timeout=180)
    yield port, tokens, work
    _kill(process, port)


def _probe(port, token, probes, user_id=None):
    url = f"sc://localhost:{port}/;token={token}" + (f";user_id={user_id}" if user_id else "")
    done = subprocess.run([sys.executable, str(TESTS / "connect_probe.py"), url,
                           json.dumps(probes)], capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items()
                               if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def _refused(seen, name, *words):
    outcome, message = seen[name]
    assert outcome == "error" and all(w in message for w in words), (name, words, message[:1500])


def test_a_connect_user_is_their_token_and_keeps_to_the_checks(server):
    port, tokens, work = server
    setup = _probe(port, tokens["root"], {
        "db": "spark.sql('CREATE DATABASE IF NOT EXISTS sales')",
        "db2": "spark.sql('CREATE DATABASE IF NOT EXISTS secret')",
        "db3": "spark.sql('CREATE DATABASE IF NOT EXISTS scratch')",
        "orders": "spark.range(4).withColumn('amount', F.col('id') * 10)"
                  ".write.saveAsTable('sales.orders')",
        "payroll": "spark.sql(\"CREATE TABLE secret.payroll USING DELTA AS SELECT 'ann' AS "
                   "name, 100 AS pay\")",
        # An admin may run client code (this server does not refuse it to admins).
        "udf": "spark.range(3).select(F.udf(lambda x: x * 2, 'long')('id')).collect()",
        "read": "spark.table('secret.payroll')",
        })
    assert all(outcome == "ok" for outcome, _ in setup.values()), setup
    assert setup["udf"][1] == [[0], [2], [4]]

    outside = work / "outside.txt"
    outside.write_text("not for ann\n")
    seen = _probe(port, tokens["ann"], {
        "windowed": "spark.sql('SELECT COUNT(*) AS n FROM sales.orders "
                    "WINDOW TUMBLING COUNT(2)')",
        "append": "spark.createDataFrame([(9, 90)], 'id long, amount long')"
                  ".write.mode('append').saveAsTable('sales.orders')",
        "mine": "spark.range(2).write.saveAsTable('scratch.mine')",
        "owner": "[r for r in spark.sql('DESCRIBE TABLE EXTENDED scratch.mine').collect() "
                 "if r[0] == 'Owner']",
        "secret_sql": "spark.sql('SELECT * FROM secret.payroll')",
        "secret_df": "spark.table('secret.payroll')",
        "join": "spark.table('sales.orders').join(spark.table('secret.payroll'))",
        # The same table reached by other routes: a statement's text run by another, a CTE,
        # a name computed by IDENTIFIER(), a SQL table function of the session.
        "immediate": "spark.sql(\"EXECUTE IMMEDIATE 'SELECT * FROM secret.payroll'\")",
        "immediate_drop": "spark.sql(\"EXECUTE IMMEDIATE 'DROP TABLE secret.payroll'\")",
        "cte": "spark.sql('WITH s AS (SELECT * FROM secret.payroll) SELECT * FROM s')",
        "identifier": "spark.sql(\"SELECT * FROM IDENTIFIER('secret.' || 'payroll')\")",
        "function": "spark.sql('CREATE TEMPORARY FUNCTION f() RETURNS TABLE (pay INT) RETURN "
                    "SELECT pay FROM secret.payroll') or spark.sql('SELECT * FROM f()')",
        "overwrite": "spark.range(1).write.mode('overwrite').saveAsTable('sales.orders')",
        "jvm": "spark.sql(\"SELECT java_method('java.lang.System', 'exit', 3)\")",
        "jvm_df": "spark.range(1).select(F.expr(\"reflect('java.lang.System', 'getenv', "
                  "'HOME')\"))",
        "file": f"spark.read.text({str(outside)!r})",
        "udf": "spark.range(3).select(F.udf(lambda x: x * 2, 'long')('id'))",
        "set_sql": "spark.sql('SET spark.sql.warehouse.dir=/tmp')",
        "set_api": "spark.conf.set('spark.sql.warehouse.dir', '/tmp')",
        "set_allowed": "spark.conf.set('spark.sql.session.timeZone', 'UTC') or "
                       "spark.conf.get('spark.sql.session.timeZone')",
        "list_tables": "spark.catalog.listTables('secret')",
        "show_tables": "spark.sql('SHOW TABLES IN secret')",
        "after": "spark.sql('SELECT 1')"})
    assert seen["windowed"] == ["ok", [[2], [2]]], seen["windowed"]
    assert seen["append"][0] == "ok" and seen["mine"][0] == "ok", seen
    assert seen["owner"] == ["ok", [["Owner", "ann", ""]]], seen["owner"]
    for name in ("secret_sql", "secret_df", "join", "immediate", "immediate_drop", "cte",
                 "identifier", "function"):
        _refused(seen, name, "access rule 'tables' for user 'ann'", "secret.payroll")
    _refused(seen, "overwrite", "access rule 'tables'", "sales.orders")
    _refused(seen, "jvm", "access rule 'jvm' for user 'ann'")
    _refused(seen, "jvm_df", "access rule 'jvm' for user 'ann'")
    _refused(seen, "file", "access rule 'paths' for user 'ann'")
    _refused(seen, "udf", "access rule 'code' for user 'ann'")
    _refused(seen, "set_sql", "access rule 'settings' for user 'ann'")
    _refused(seen, "set_api", "access rule 'settings' for user 'ann'", "spark.sql.warehouse.dir")
    assert seen["set_allowed"] == ["ok", "UTC"]
    _refused(seen, "list_tables", "access rule 'tables' for user 'ann'")
    assert seen["show_tables"] == ["ok", []]
    assert seen["after"] == ["ok", [[1]]]

    # Who a client is comes from its token: with ann's token, a client that claims to be root
    # is ann (and pyspark's default user_id, the operating system's user, is no claim).
    claimed = _probe(port, tokens["ann"], {"secret": "spark.table('secret.payroll')",
                                           "mine": "spark.table('scratch.mine').count()"},
                     user_id="root")
    _refused(claimed, "secret", "access rule 'tables' for user 'ann'")
    assert claimed["mine"] == ["ok", 2], claimed
    unknown = _probe(port, "not-a-token", {"one": "spark.sql('SELECT 1')"})
    _refused(unknown, "one", "token is not one of the server's")
    after = _probe(port, tokens["root"], {
        "payroll": "spark.table('secret.payroll')",
        "orders": "spark.sql('SELECT COUNT(*), SUM(amount) FROM sales.orders')"})
    assert after == {"payroll": ["ok", [["ann", 100]]], "orders": ["ok", [[5, 150]]]}, after


def test_a_connect_user_reaches_files_only_through_tables_and_rules(server):
    """DataFrame reads and writes by path (no table's folder: every path in the warehouse, as a
    user without a locations rule), Kafka options, and a table's row filter and column masks
    under SQL and DataFrame plans."""
    port, tokens, work = server
    payroll = work / "warehouse" / "secret.db" / "payroll"
    setup = _probe(port, tokens["root"], {
        "dbs": "[spark.sql(f'CREATE DATABASE IF NOT EXISTS {db}') for db in "
               "('sales', 'secret', 'scratch')]",
        "payroll": "spark.sql(\"CREATE TABLE IF NOT EXISTS secret.payroll USING DELTA AS "
                   "SELECT 'ann' AS name, 100 AS pay\")",
        "mine": "spark.sql('CREATE TABLE IF NOT EXISTS scratch.mine USING DELTA AS "
                "SELECT id FROM range(2)')",
        "cards": "spark.sql(\"CREATE TABLE sales.cards USING DELTA AS SELECT * FROM VALUES "
                 "(1, 'EU', '1111', '1-1'), (2, 'US', '2222', '2-2') AS t(id, region, card, "
                 "ssn)\")"})
    assert all(outcome == "ok" for outcome, _ in setup.values()), setup
    seen = _probe(port, tokens["ann"], {
        "parquet": f"spark.read.parquet({str(payroll)!r})",
        "delta": f"spark.read.format('delta').load({str(payroll)!r})",
        "log": f"spark.read.text({str(payroll / '_delta_log')!r})",
        "overwrite": f"spark.range(1).write.mode('overwrite').parquet({str(payroll)!r})",
        "save": f"spark.range(1).write.format('delta').mode('overwrite').save({str(payroll)!r})",
        "table_path": f"spark.range(1).write.option('path', {str(payroll)!r})"
                      ".saveAsTable('scratch.stolen')",
        "stream": f"spark.readStream.format('delta').load({str(payroll)!r})"
                  ".writeStream.format('memory').queryName('q').start()",
        "checkpoint": "spark.readStream.table('scratch.mine').writeStream.option("
                      f"'checkpointLocation', {str(payroll)!r}).toTable('scratch.sink')",
        "model": "__import__('pyspark.ml.feature', fromlist=['StringIndexer']).StringIndexer("
                 "inputCol='c', outputCol='i').fit(spark.createDataFrame([('a',)], 'c string'))"
                 f".write().save({str(payroll / 'model')!r})",
        "kafka": "spark.read.format('kafka').option('kafka.bootstrap.servers', "
                 "'10.1.2.3:9092').option('subscribe', 't').load()",
        "cards_sql": "spark.sql('SELECT id, card FROM sales.cards ORDER BY id')",
        "cards_df": "spark.table('sales.cards').select('id', 'card').orderBy('id')",
        "cards_filter": "spark.table('sales.cards').filter(\"card = '1111'\").select('id')",
        "cards_star": "spark.table('sales.cards')",
        "cards_hidden": "spark.table('sales.cards').select('ssn')",
        "after": "spark.sql('SELECT 1')"})
    for name in ("parquet", "delta", "log", "overwrite", "save", "table_path", "stream",
                 "checkpoint", "model"):
        # (Connect shortens a long message: the path, which names the table's folder, comes
        # first.)
        _refused(seen, name, "access rule 'paths' for user 'ann'", "payroll")
    _refused(seen, "kafka", "access rule 'network' for user 'ann'", "10.1.2.3:9092")
    assert seen["cards_sql"] == ["ok", [[1, "XX"]]], seen["cards_sql"]
    assert seen["cards_df"] == ["ok", [[1, "XX"]]], seen["cards_df"]
    assert seen["cards_filter"] == ["ok", []], seen["cards_filter"]
    for name in ("cards_star", "cards_hidden"):
        _refused(seen, name, "access rule 'tables' for user 'ann'",
                 "the column ssn of sales.cards is hidden")
    assert seen["after"] == ["ok", [[1]]]
    after = _probe(port, tokens["root"], {
        "payroll": "spark.table('secret.payroll')",
        "cards": "spark.sql('SELECT id, card, ssn FROM sales.cards ORDER BY id')"})
    assert after == {"payroll": ["ok", [["ann", 100]]],
                     "cards": ["ok", [[1, "1111", "1-1"], [2, "2222", "2-2"]]]}, after


def test_no_client_udfs_refuses_client_code_to_admins_too(tmp_path):
    port = free_port()
    with open(tmp_path / "server.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "sql_ext.cli", "connect-server", "--port", str(port),
             "--warehouse", str(tmp_path / "warehouse"), "--no-client-udfs"],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True)
    try:
        wait_for_port("127.0.0.1", port, timeout=180)
        seen = _probe(port, "unused", {
            "udf": "spark.range(3).select(F.udf(lambda x: x * 2, 'long')('id'))",
            "windowed": "spark.sql('SELECT COUNT(*) AS n FROM range(4) "
                        "WINDOW TUMBLING COUNT(2)')"})
        _refused(seen, "udf", "runs no client code", "--no-client-udfs")
        assert seen["windowed"] == ["ok", [[2], [2]]], seen
    finally:
        _kill(process, port)


def test_no_client_reads_a_secret_setting(server):
    """The operator's secret reaches the session (it is set) but no client reads its value
    through the config API, admins included, as no SET shows it (tests/test_server_settings.py
    for the Thrift server and the command lines)."""
    port, tokens, _ = server
    key, secret = SECRET_SETTING
    for user in ("ann", "root"):
        seen = _probe(port, tokens[user], {
            "get": f"spark.conf.get({key!r})",
            "default": f"spark.conf.get({key!r}, 'unset')",
            "all": f"sorted(spark.conf.getAll.items())",
            "sql": f"spark.sql('SET {key}')",
            "other": "spark.conf.get('spark.sql.session.timeZone')"})
        assert secret not in json.dumps(seen), (user, seen)
        assert seen["get"] == seen["default"] == ["ok", "*********(redacted)"], (user, seen)
        assert [key, "*********(redacted)"] in seen["all"][1], (user, seen["all"])
        assert seen["sql"] == ["ok", [[key, "*********(redacted)"]]], (user, seen)
        assert seen["other"] == ["ok", "UTC"], (user, seen)
