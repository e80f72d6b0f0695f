"""Password authentication of `sql-ext thriftserver` (HiveServer2 CUSTOM with the JVM module's
PasswordFileAuthenticator): the right password signs in through PyHive and beeline and runs
windowed SQL; a wrong password, an unknown user or no credentials are refused; the server will
not listen beyond loopback without authentication unless told to.

Least privilege (io.sqlext.access): a signed-in user who is not an admin is refused, naming the
rule, whatever reaches the JVM or the operating system, loads code, changes a setting outside
the allow-list or points a path outside the server's folders; an admin (--admin) may; after
each refusal the server answers the next statement and no table changed. With an access rules
file (--access-rules), each user's tables are those its first matching rule gives, at every
door: SQL, streaming tables, SHOW STREAMS, window_state() and the JDBC metadata calls."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from pyhive import hive
from secured import dbt_as, rewrite_rules, rules
from test_managed_streams import _until

from sql_ext.server.auth import hash_line

WINDOWED = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n FROM VALUES ('a'), ('a'), ('b'), ('a') "
            "AS t(k) WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")


# The security suite's one server (tests/secured.py, conftest's `secured_server`), on one worker.
pytestmark = pytest.mark.xdist_group("secured_server")


@pytest.fixture(scope="module")
def secured(secured_server):
    """The secured server's port."""
    return secured_server[0]


def _windowed(port, user, password):
    with hive.connect(host="127.0.0.1", port=port, username=user, password=password,
                      auth="CUSTOM") as conn:
        cursor = conn.cursor()
        cursor.execute(WINDOWED)
        return sorted(cursor.fetchall())


def test_pyhive_signs_in_with_the_right_password_only(secured):
    assert _windowed(secured, "ann", "s3cret") == [("a", 0, 2)]
    assert _windowed(secured, "bob", "other") == [("a", 0, 2)]
    for user, password in (("ann", "wrong"), ("ann", "other"), ("carl", "s3cret")):
        with pytest.raises(Exception, match="Error validating the login"):
            _windowed(secured, user, password)
    with pytest.raises(Exception, match="Error validating the login"):
        hive.connect(host="127.0.0.1", port=secured).cursor().execute("SELECT 1")


def _beeline(port, user, password):
    beeline = Path(pyspark.__file__).parent / "bin" / "beeline"
    env = dict(os.environ, SPARK_HOME=str(Path(pyspark.__file__).parent))
    return subprocess.run(
        [str(beeline), "-u", f"jdbc:hive2://127.0.0.1:{port}/default", "-n", user,
         "-p", password, "--silent=true", "--outputformat=csv2", "-e", "SELECT 40 + 2 AS x"],
        capture_output=True, text=True, timeout=180, env=env)


def test_beeline_signs_in_with_the_right_password_only(secured):
    right = _beeline(secured, "ann", "s3cret")
    assert right.returncode == 0, right.stderr[-2000:]
    assert [re.sub(r"^\d+: jdbc:\S*> ", "", line) for line in right.stdout.split()
            if line.strip()][-2:] == ["x", "42"]
    wrong = _beeline(secured, "ann", "wrong")
    assert "Error validating the login" in wrong.stdout + wrong.stderr


def test_no_authentication_beyond_loopback_is_refused(tmp_path):
    cli = [sys.executable, "-m", "sql_ext.cli", "thriftserver", "--warehouse", str(tmp_path)]
    refused = subprocess.run([*cli, "--host", "0.0.0.0"], capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode != 0
    assert "refusing to listen on 0.0.0.0 without authentication" in refused.stderr
    missing = subprocess.run([*cli, "--auth", "password", "--password-file",
                              str(tmp_path / "none")], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode != 0 and "needs --password-file FILE" in missing.stderr
    assert not (tmp_path / "metastore_db").exists()  # refused before any session started


def test_a_password_line_is_salted_and_names_its_scheme():
    first, second = hash_line("ann", "s3cret"), hash_line("ann", "s3cret")
    assert first != second  # a new salt each time
    user, scheme, iterations, salt, digest = first.split(":")
    assert (user, scheme, int(iterations)) == ("ann", "pbkdf2_sha256", 200_000)
    with pytest.raises(ValueError, match="without ':'"):
        hash_line("a:b", "x")


# -- least privilege ----------------------------------------------------------------------------

def _as(port, user, password):
    return hive.connect(host="127.0.0.1", port=port, username=user, password=password,
                        auth="CUSTOM").cursor()


def _run(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchall() if cursor.description else None


def _refused(cursor, sql, rule, user="ann", naming=""):
    """`sql` is refused naming `rule`, the user and `naming`; the server answers the next
    statement."""
    with pytest.raises(Exception) as error:
        _run(cursor, sql)
    message = str(error.value)
    assert f"access rule '{rule}' for user '{user}'" in message and naming in message, message
    assert "Traceback" not in message and "\tat " not in message, message
    assert _run(cursor, "SELECT 1") == [(1,)]


@pytest.fixture(scope="module")
def tables(secured):
    """A table in the warehouse (made by the admin), which every test checks is unchanged."""
    admin = _as(secured, "root", "admin-pw")
    _run(admin, "CREATE DATABASE IF NOT EXISTS team")
    _run(admin, "CREATE TABLE team.readings USING DELTA AS SELECT id, id * 2 AS v FROM range(5)")
    return admin


def _unchanged(admin):
    assert _run(admin, "SELECT COUNT(*), SUM(v) FROM team.readings") == [(5, 20)]


def test_a_user_reaches_no_jvm_method_or_command(secured, tables):
    ann = _as(secured, "ann", "s3cret")
    _refused(ann, "SELECT java_method('java.lang.System', 'exit', 3)", "jvm")
    _refused(ann, "SELECT reflect('java.lang.System', 'getenv', 'HOME')", "jvm")
    _refused(ann, "SELECT try_reflect('java.lang.System', 'getProperty', 'user.home')", "jvm")
    _refused(ann, "SELECT v FROM team.readings WHERE "
                  "reflect('java.lang.System', 'exit', 3) IS NOT NULL", "jvm")
    _refused(ann, "SELECT TRANSFORM(id) USING 'cat' AS (x) FROM team.readings", "jvm")
    # A JDBC source: its options run statements when it connects (Derby, embedded in the server
    # for its catalog, runs them in the server's JVM).
    derby = "OPTIONS (url 'jdbc:derby:memory:probe;create=true', dbtable 'SYS.SYSTABLES')"
    _refused(ann, f"CREATE TEMPORARY VIEW systables USING jdbc {derby}", "jvm")
    _refused(ann, f"CREATE TABLE team.systables USING org.apache.spark.sql.jdbc {derby}", "jvm")
    # In a windowed query, and in a streaming table's query (planned in a session of its own).
    _refused(ann, "SELECT COUNT(*) FROM team.readings WHERE reflect('java.lang.System', "
                  "'getenv', 'HOME') IS NULL WINDOW TUMBLING COUNT(2)", "jvm")
    _refused(ann, "CREATE STREAMING TABLE team.sneaky AS SELECT reflect('java.lang.System', "
                  "'getenv', 'HOME') AS h, COUNT(*) AS n FROM STREAM(team.readings) "
                  "WINDOW TUMBLING COUNT(2)", "jvm")
    root = _as(secured, "root", "admin-pw")
    assert _run(root, "SELECT reflect('java.lang.String', 'valueOf', 7)") == [("7",)]
    _run(root, f"CREATE TEMPORARY VIEW systables USING jdbc {derby}")
    assert _run(root, "SELECT COUNT(*) > 0 FROM systables") == [(True,)]
    # A client cannot name another user to act as: refused by the guard of what a connection
    # sets, and for an admin by HiveServer2 (proxy-user substitution is off).
    with pytest.raises(Exception, match="access rule 'settings' for user 'ann'.*proxy.user"):
        hive.connect(host="127.0.0.1", port=secured, username="ann", password="s3cret",
                     auth="CUSTOM", configuration={"hive.server2.proxy.user": "root"})
    with pytest.raises(Exception, match="(?i)substitution is not allowed"):
        hive.connect(host="127.0.0.1", port=secured, username="root", password="admin-pw",
                     auth="CUSTOM", configuration={"hive.server2.proxy.user": "ann"})
    _unchanged(tables)


def test_a_user_loads_no_code_and_sets_only_the_allowed_settings(secured, tables):
    ann = _as(secured, "ann", "s3cret")
    jar = Path(__file__).resolve().parents[1] / "sql_ext" / "jars" / "sql-ext.jar"
    _refused(ann, f"ADD JAR {jar}", "code")
    _refused(ann, f"ADD FILE {jar}", "code")
    _refused(ann, "CREATE TEMPORARY FUNCTION up AS 'org.apache.hadoop.hive.ql.udf.UDFAscii'",
             "code")
    _refused(ann, "SET spark.sql.warehouse.dir=/tmp", "settings")
    _refused(ann, "SET spark.sql_ext.streaming.sinkWrapper=this:x", "settings")
    # What a user may: a SQL function, the allowed settings, reading any setting.
    _run(ann, "CREATE TEMPORARY FUNCTION plus_one(x INT) RETURNS INT RETURN x + 1")
    assert _run(ann, "SELECT plus_one(41)") == [(42,)]
    _run(ann, "SET spark.sql.ansi.enabled=true")
    _run(ann, "SET spark.sql.session.timeZone=Europe/Paris")
    assert _run(ann, "SET spark.sql.shuffle.partitions")[0][0] == "spark.sql.shuffle.partitions"
    root = _as(secured, "root", "admin-pw")
    _run(root, f"ADD JAR {jar}")
    _run(root, "SET spark.sql.files.maxPartitionBytes=64m")
    _unchanged(tables)


def _connect_as(port, user, password, configuration):
    return hive.connect(host="127.0.0.1", port=port, username=user, password=password,
                        auth="CUSTOM", configuration=configuration).cursor()


def test_a_connection_sets_only_the_allowed_settings(secured, tables):
    """What a connection sets as its session opens, which HiveServer2 applies before any
    statement: for a user who is not an admin only the settings of the allow-list. A system
    property of the server's JVM (where the authenticator finds its password file), a metastore
    setting, a Hive or Spark setting outside the list refuse the session, naming the rule."""
    for key in ("set:system:sql_ext.auth.password_file", "set:hiveconf:spark.sql.warehouse.dir",
                "set:hivevar:spark.sql_ext.streaming.sinkWrapper", "set:spark.jars",
                "set:metaconf:hive.metastore.try.direct.sql", "hive.exec.scratchdir"):
        with pytest.raises(Exception) as error:
            _connect_as(secured, "ann", "s3cret", {key: "/tmp/ann"})
        message = str(error.value)
        assert "access rule 'settings' for user 'ann'" in message and key in message, message
    # The password file is still the server's own: a new sign-in reads it.
    assert _windowed(secured, "bob", "other") == [("a", 0, 2)]
    # An allowed setting, also bare (as dbt-spark sends spark.sql.ansi.enabled).
    ann = _connect_as(secured, "ann", "s3cret", {
        "set:hiveconf:spark.sql.session.timeZone": "Asia/Tokyo", "use:database": "team",
        "spark.sql.ansi.enabled": "true"})
    assert _run(ann, "SET spark.sql.session.timeZone") == [
        ("spark.sql.session.timeZone", "Asia/Tokyo")]
    assert _run(ann, "SELECT COUNT(*) FROM team.readings") == [(5,)]
    root = _connect_as(secured, "root", "admin-pw",
                       {"set:hiveconf:spark.sql.files.maxPartitionBytes": "64m"})
    assert _run(root, "SET spark.sql.files.maxPartitionBytes") == [
        ("spark.sql.files.maxPartitionBytes", "64m")]
    _unchanged(tables)


def test_a_user_s_paths_stay_inside_the_server_s_folders(secured_server, tables, tmp_path):
    secured, work = secured_server
    ann = _as(secured, "ann", "s3cret")
    landing = work / "landing"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for ann\n")
    _refused(ann, f"SELECT * FROM text.`{outside / 'secret.txt'}`", "paths")
    _refused(ann, f"SELECT * FROM text.`{work / 'team.passwords'}`", "paths")
    root = _as(secured, "root", "admin-pw")  # an admin's Delta table outside the folders
    _run(root, f"CREATE TABLE team.kept USING DELTA LOCATION '{outside / 'kept'}' "
               "AS SELECT 1 AS a")
    _run(root, "INSERT INTO team.kept VALUES (2)")  # a version 1, to RESTORE from
    _refused(ann, f"SELECT * FROM delta.`{outside / 'kept'}`", "paths")
    # Delta's commands on a table named by its path, and a clone of one.
    for command in ("VACUUM", "DESCRIBE HISTORY", "OPTIMIZE"):
        _refused(ann, f"{command} delta.`{outside / 'kept'}`", "paths")
    _refused(ann, f"RESTORE TABLE delta.`{outside / 'kept'}` TO VERSION AS OF 0", "paths")
    _refused(ann, f"CREATE TABLE team.cloned SHALLOW CLONE delta.`{outside / 'kept'}`",
             "paths")
    _refused(ann, f"INSERT OVERWRITE DIRECTORY '{outside / 'dump'}' USING parquet "
                  "SELECT * FROM team.readings", "paths")
    _refused(ann, f"CREATE TABLE team.elsewhere (a INT) USING DELTA LOCATION '{outside}'",
             "paths")
    _refused(ann, f"CREATE TABLE team.elsewhere USING DELTA LOCATION '{landing}/../../x' "
                  "AS SELECT 1 AS a", "paths")
    _refused(ann, f"CREATE TABLE team.raw (value STRING) USING text OPTIONS "
                  f"(path '{outside}')", "paths")
    _run(root, "CREATE TABLE team.lines (value STRING) STORED AS TEXTFILE")  # a Hive table
    _refused(ann, f"LOAD DATA LOCAL INPATH '{outside / 'secret.txt'}' INTO TABLE team.lines",
             "paths")
    # A link inside an allowed folder to a folder outside it is outside.
    (landing / "link").symlink_to(outside, target_is_directory=True)
    _refused(ann, f"SELECT * FROM text.`{landing / 'link' / 'secret.txt'}`", "paths")
    _refused(ann, "CREATE STREAMING TABLE team.counted CHECKPOINT "
                  f"'{outside / 'checkpoint'}' AS SELECT COUNT(*) AS n "
                  "FROM STREAM(team.readings) WINDOW TUMBLING COUNT(2)", "paths")
    assert not any(outside.glob("dump*")) and not (outside / "checkpoint").exists()
    assert _run(root, "SELECT COUNT(*) FROM team.lines") == [(0,)]
    assert _run(root, "SELECT COUNT(*) FROM team.kept") == [(2,)]
    # Inside the server's folders: the warehouse and --allow-path.
    (landing / "rows.txt").write_text("a\nb\n")
    assert _run(ann, f"SELECT COUNT(*) FROM text.`{landing / 'rows.txt'}`") == [(2,)]
    _run(ann, f"CREATE TABLE team.landed USING DELTA LOCATION '{landing / 'landed'}' "
              "AS SELECT 1 AS a")
    _run(ann, "CREATE STREAMING TABLE team.counted AS SELECT COUNT(*) AS n "
              "FROM STREAM(team.readings) WINDOW TUMBLING COUNT(2)")
    assert _run(ann, "SELECT SUM(n) FROM team.counted") == [(4,)]
    assert _run(root, f"SELECT * FROM text.`{outside / 'secret.txt'}`") == [("not for ann",)]
    _unchanged(tables)


# -- access rules ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sales(secured, tables):
    """The admin's sales.orders and sales.customers, secret.payroll and a view of it in sales;
    the admin's cursor."""
    admin = tables
    for db in ("sales", "secret", "live"):
        _run(admin, f"CREATE DATABASE IF NOT EXISTS {db}")
    _run(admin, "CREATE TABLE sales.orders USING DELTA AS SELECT id, id * 10 AS amount "
                "FROM range(4)")
    _run(admin, "CREATE TABLE sales.customers USING DELTA AS SELECT 'c' AS name")
    _run(admin, "CREATE TABLE secret.payroll USING DELTA AS SELECT 'ann' AS name, 100 AS pay")
    _run(admin, "CREATE VIEW sales.payroll_view AS SELECT * FROM secret.payroll")
    # (JDBC's getColumns lists the columns the catalog holds: a Delta table's are in its log.)
    _run(admin, "CREATE TABLE secret.codes USING PARQUET AS SELECT 1 AS code")
    return admin


def _sales_unchanged(admin):
    assert _run(admin, "SELECT * FROM secret.payroll") == [("ann", 100)]
    assert _run(admin, "SELECT * FROM sales.customers") == [("c",)]
    assert _run(admin, "SELECT COUNT(*), SUM(amount) FROM sales.orders") == [(4, 60)]
    assert sorted(row[1] for row in _run(admin, "SHOW TABLES IN sales")) == [
        "customers", "orders", "payroll_view"]


def test_the_access_rules_give_each_user_their_tables(secured, sales):
    bob, ann = _as(secured, "bob", "other"), _as(secured, "ann", "s3cret")
    # bob reads the database sales (his group's rule), nothing else, and writes nothing.
    assert _run(bob, "SELECT COUNT(*) FROM sales.orders") == [(4,)]
    assert _run(bob, "SELECT COUNT(*) AS n FROM sales.customers WINDOW TUMBLING COUNT(1)") \
        == [(1,)]
    for sql, what in (
            ("SELECT * FROM secret.payroll", "SELECT on secret.payroll: no rule of the access "
                                             "rules file gives bob any access to it"),
            ("SELECT * FROM sales.payroll_view", "secret.payroll"),  # a view: its tables too
            ("SELECT o.id FROM sales.orders o JOIN secret.payroll p ON o.id = p.pay", "secret"),
            ("SELECT * FROM sales.orders WHERE id IN (SELECT pay FROM secret.payroll)",
             "secret.payroll"),
            ("SELECT COUNT(*) AS n FROM secret.payroll WINDOW TUMBLING COUNT(1)",
             "secret.payroll"),
            ("DESCRIBE TABLE secret.payroll", "secret.payroll"),
            ("INSERT INTO sales.orders VALUES (9, 90)", "INSERT on sales.orders"),
            ("DELETE FROM sales.orders WHERE id = 0", "DELETE on sales.orders"),
            ("UPDATE sales.orders SET amount = 0", "UPDATE on sales.orders"),
            ("MERGE INTO sales.orders t USING sales.customers s ON t.id = 1 "
             "WHEN MATCHED THEN DELETE", "on sales.orders"),
            ("TRUNCATE TABLE sales.orders", "DELETE on sales.orders"),
            ("DROP TABLE sales.customers", "DROP on sales.customers"),
            ("ALTER TABLE sales.orders SET TBLPROPERTIES ('x' = '1')", "ALTER on sales.orders"),
            ("CREATE TABLE sales.mine (a INT) USING DELTA", "CREATE on sales.mine"),
            ("CREATE OR REPLACE VIEW sales.payroll_view AS SELECT 1 AS a",
             "on sales.payroll_view"),
            ("CREATE DATABASE bobs", "database bobs"),
            ("DROP DATABASE secret CASCADE", "database secret"),
            ("SELECT * FROM window_state('live.counts')", "live.counts")):
        _refused(bob, sql, "tables", "bob", what)
    # ann: SELECT and INSERT on sales.orders only; her own database team; nothing else.
    _run(ann, "INSERT INTO sales.orders VALUES (4, 40)")
    assert _run(ann, "SELECT COUNT(*) FROM sales.orders") == [(5,)]
    # (A RESTORE to the version a table is at is nothing: Delta plans no command for it.)
    _refused(bob, "RESTORE TABLE sales.orders TO VERSION AS OF 0", "tables", "bob",
             "ALTER on sales.orders")
    _refused(ann, "DELETE FROM sales.orders WHERE id = 4", "tables", naming="DELETE on "
             "sales.orders is not among the privileges the first matching rule gives "
             "(INSERT, SELECT)")
    _refused(ann, "SELECT * FROM sales.customers", "tables")
    _refused(ann, "INSERT INTO sales.orders SELECT pay, pay FROM secret.payroll", "tables",
             naming="secret.payroll")
    _refused(ann, "CREATE TABLE team.copied USING DELTA AS SELECT * FROM secret.payroll",
             "tables", naming="secret.payroll")
    _refused(ann, "CREATE TABLE team.cloned SHALLOW CLONE secret.payroll", "tables",
             naming="secret.payroll")
    _refused(ann, "CREATE TABLE team.shaped LIKE secret.payroll", "tables",
             naming="secret.payroll")
    _run(ann, "CREATE TABLE team.mine USING DELTA AS SELECT * FROM sales.orders")
    _refused(ann, "ALTER TABLE team.mine RENAME TO sales.mine", "tables",
             naming="CREATE on sales.mine")
    # Who created a table is recorded and shown.
    owner = [row for row in _run(ann, "DESCRIBE TABLE EXTENDED team.mine") if row[0] == "Owner"]
    assert owner == [("Owner", "ann", "")], owner
    # Admins: root (--admin) and ops (the rules file's) may do anything.
    ops = _as(secured, "ops", "ops-pw")
    assert _run(ops, "SELECT pay FROM secret.payroll") == [(100,)]
    assert _run(_as(secured, "root", "admin-pw"), "SELECT COUNT(*) FROM sales.payroll_view") \
        == [(1,)]
    _run(ops, "DELETE FROM sales.orders WHERE id = 4")
    _sales_unchanged(sales)
    _unchanged(sales)


def test_streaming_tables_and_show_streams_keep_to_the_rules(secured, sales):
    ann, bob = _as(secured, "ann", "s3cret"), _as(secured, "bob", "other")
    stream = ("CREATE STREAMING TABLE {} AS SELECT COUNT(*) AS n FROM STREAM({}) "
              "WINDOW TUMBLING COUNT(2)")
    _refused(ann, stream.format("live.paid", "secret.payroll"), "tables",
             naming="secret.payroll")
    _refused(ann, stream.format("sales.counts", "sales.orders"), "tables",
             naming="STREAM on sales.counts")
    _run(ann, stream.format("live.counts", "sales.orders"))
    assert _run(ann, "SELECT SUM(n) FROM live.counts") == [(4,)]
    assert _run(ann, "SELECT COUNT(*) >= 0 FROM window_state('live.counts')") == [(True,)]
    for sql in ("REFRESH STREAMING TABLE live.counts", "STOP STREAM live.counts",
                "DROP STREAMING TABLE live.counts", stream.format("live.other", "sales.orders")):
        _refused(bob, sql, "tables", "bob", "live.")
    # SHOW STREAMS lists the streams of the tables a user may read, with their owner.
    assert not [row for row in _run(bob, "SHOW STREAMS") if "live" in row[0]]
    counts = [row for row in _run(ann, "SHOW STREAMS") if "counts" in row[0]]
    assert len(counts) == 1 and counts[0][-1] == "ann", counts
    owner = [row for row in _run(ann, "DESCRIBE TABLE EXTENDED live.counts") if row[0] == "Owner"]
    assert owner == [("Owner", "ann", "")], owner
    assert [row for row in _run(_as(secured, "ops", "ops-pw"), "SHOW STREAMS")
            if "counts" in row[0]]
    _run(ann, "DROP STREAMING TABLE live.counts")
    _sales_unchanged(sales)


def _tables_in_beeline(port, user, password, folder):
    """beeline's !tables (JDBC's DatabaseMetaData.getTables): its output."""
    script = folder / f"tables-{user}.sql"
    script.write_text("!tables\n")
    beeline = Path(pyspark.__file__).parent / "bin" / "beeline"
    env = dict(os.environ, SPARK_HOME=str(Path(pyspark.__file__).parent))
    done = subprocess.run(
        [str(beeline), "-u", f"jdbc:hive2://127.0.0.1:{port}/default", "-n", user,
         "-p", password, "--silent=true", "--outputformat=csv2", "-f", str(script)],
        capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _metadata_call(port, user, password, call, **request):
    """The rows of the Thrift metadata call `call` (GetTables, GetColumns) as PyHive's
    connection sends it, fetched as a statement's rows are."""
    from TCLIService import ttypes

    connection = hive.connect(host="127.0.0.1", port=port, username=user, password=password,
                              auth="CUSTOM")
    response = getattr(connection.client, call)(
        getattr(ttypes, f"T{call}Req")(sessionHandle=connection.sessionHandle, **request))
    assert response.status.statusCode == ttypes.TStatusCode.SUCCESS_STATUS, response.status
    cursor = connection.cursor()
    cursor._state, cursor._operationHandle = cursor._STATE_RUNNING, response.operationHandle
    return [tuple(row) for row in cursor.fetchall()]


def test_jdbc_metadata_lists_only_the_tables_a_user_may_read(secured, sales, tmp_path):
    bob = _tables_in_beeline(secured, "bob", "other", tmp_path)
    assert "orders" in bob and "customers" in bob and "payroll_view" in bob, bob
    assert "payroll," not in bob and "readings" not in bob, bob

    def tables(user, password):
        return {(row[1], row[2]) for row in _metadata_call(
            secured, user, password, "GetTables", schemaName="%", tableName="%")}

    def columns(user, password):
        return {(row[1], row[2], row[3]) for row in _metadata_call(
            secured, user, password, "GetColumns", schemaName="%", tableName="%",
            columnName="%")}

    assert {t for t in tables("bob", "other") if t[0] in ("sales", "secret", "team")} == {
        ("sales", "orders"), ("sales", "customers"), ("sales", "payroll_view")}
    assert ("sales", "payroll_view", "pay") in columns("bob", "other")
    assert not {c for c in columns("bob", "other") if c[0] != "sales"}
    assert ("secret", "payroll") in tables("ops", "ops-pw")
    assert ("secret", "codes", "code") in columns("ops", "ops-pw")
    # ann: her own database, the one table of sales she may read, and no more.
    assert {t for t in tables("ann", "s3cret") if t[0] in ("sales", "secret")} == {
        ("sales", "orders")}
    # SHOW TABLES and SHOW TABLE EXTENDED (dbt lists a schema's relations so) alike.
    bob_sql = _as(secured, "bob", "other")
    assert _run(bob_sql, "SHOW TABLES IN secret") == []
    assert sorted(row[1] for row in _run(bob_sql, "SHOW TABLES IN sales")) == [
        "customers", "orders", "payroll_view"]
    assert _run(bob_sql, "SHOW TABLE EXTENDED IN secret LIKE '*'") == []
    ann_sql = _as(secured, "ann", "s3cret")
    _run(ann_sql, "USE sales")
    assert [row[1] for row in _run(ann_sql, "SHOW TABLES")] == ["orders"]
    assert sorted(row[1] for row in _run(_as(secured, "ops", "ops-pw"),
                                         "SHOW TABLES IN secret")) == ["codes", "payroll"]


def test_sql_functions_keep_to_the_rules(secured, sales):
    """A persistent SQL function is its database's: creating, replacing or dropping one needs
    CREATE / DROP on the database, as for the database itself. Calling one reads what its body
    reads, with the caller's rights; a temporary function is the session's own."""
    admin = sales
    bob, ann = _as(secured, "bob", "other"), _as(secured, "ann", "s3cret")
    _run(admin, "CREATE OR REPLACE FUNCTION sales.pay_of(who STRING) RETURNS INT "
                "RETURN (SELECT MAX(pay) FROM secret.payroll WHERE name = who)")
    _run(admin, "CREATE OR REPLACE FUNCTION sales.pay_rows() RETURNS TABLE (name STRING, "
                "pay INT) RETURN SELECT * FROM secret.payroll")
    try:
        assert _run(admin, "SELECT sales.pay_of('ann')") == [(100,)]
        _refused(bob, "SELECT sales.pay_of('ann')", "tables", "bob", "secret.payroll")
        _refused(bob, "SELECT * FROM sales.pay_rows()", "tables", "bob", "secret.payroll")
        _refused(bob, "CREATE OR REPLACE FUNCTION sales.pay_of(who STRING) RETURNS INT "
                      "RETURN 0", "tables", "bob", "sales")
        _refused(bob, "CREATE FUNCTION sales.mine(x INT) RETURNS INT RETURN x", "tables", "bob",
                 "sales")
        _refused(bob, "DROP FUNCTION sales.pay_rows", "tables", "bob", "sales")
        assert _run(admin, "SELECT sales.pay_of('ann')") == [(100,)]
        _run(bob, "CREATE TEMPORARY FUNCTION twice(x INT) RETURNS INT RETURN 2 * x")
        assert _run(bob, "SELECT twice(21)") == [(42,)]
        # ann owns the database team: her functions there are hers to make and drop.
        _run(ann, "CREATE FUNCTION team.plus_one(x INT) RETURNS INT RETURN x + 1")
        assert _run(ann, "SELECT team.plus_one(41)") == [(42,)]
        _run(ann, "DROP FUNCTION team.plus_one")
    finally:
        _run(admin, "DROP FUNCTION IF EXISTS sales.pay_of")
        _run(admin, "DROP FUNCTION IF EXISTS sales.pay_rows")
        _run(admin, "DROP FUNCTION IF EXISTS sales.mine")
    _sales_unchanged(sales)


def _rewrite_rules(work, content):
    """The server's rules file with `content`, its time moved on (the server reads it again)."""
    rewrite_rules(work, content)


def test_the_rules_file_is_read_again_when_it_changes(secured_server, sales):
    secured, work = secured_server
    bob = _as(secured, "bob", "other")
    _refused(bob, "SELECT * FROM secret.payroll", "tables", "bob")

    try:
        _rewrite_rules(work, json.dumps({**rules(work), "tables": [
            {"user": "bob", "database": "secret", "privileges": ["SELECT"]},
            *rules(work)["tables"]]}))
        assert _run(bob, "SELECT pay FROM secret.payroll") == [(100,)]
        _rewrite_rules(work, '{"tables": [{"user": "bob", "privileges": ["READ"]}]}')
        _refused(bob, "SELECT * FROM sales.orders", "tables", "bob",
                 "invalid since it changed")
    finally:
        _rewrite_rules(work, json.dumps(rules(work)))
    assert _run(bob, "SELECT COUNT(*) FROM sales.customers") == [(1,)]
    _refused(bob, "SELECT * FROM secret.payroll", "tables", "bob")


def test_a_running_stream_stops_when_the_rules_take_its_source_away(secured_server, sales):
    """A continuous stream runs as its user: rules changed while it runs are checked before
    each micro-batch, as before each statement. Its user loses the source: the next
    micro-batch is refused (the stream FAILED, naming the rule), and nothing more is written."""
    secured, work = secured_server
    admin, ann = sales, _as(secured, "ann", "s3cret")
    _run(admin, "CREATE DATABASE IF NOT EXISTS feed")
    _run(admin, "CREATE TABLE feed.src USING DELTA AS SELECT id AS seq FROM range(4)")
    granted = {**rules(work), "tables": [
        {"user": "ann", "database": "feed", "privileges": ["SELECT"]}, *rules(work)["tables"]]}
    ops = _as(secured, "ops", "ops-pw")

    def flow():
        ops.execute("SHOW STREAMS")
        columns = [d[0] for d in ops.description]
        return next(dict(zip(columns, row)) for row in ops.fetchall()
                    if row[0] == "live.flow")

    try:
        _rewrite_rules(work, json.dumps(granted))
        _run(ann, "CREATE STREAMING TABLE live.flow TRIGGER EVERY 1 AS SELECT COUNT(*) AS n "
                  "FROM STREAM(feed.src) WINDOW TUMBLING COUNT(2)")
        _until(lambda: _run(ann, "SELECT SUM(n) FROM live.flow") == [(4,)], "the first windows")
        _rewrite_rules(work, json.dumps(rules(work)))
        _run(admin, "INSERT INTO feed.src VALUES (4), (5)")
        failed = _until(lambda: (lambda s: s if s["state"] == "FAILED" else None)(flow()),
                        "the stream to stop")
        assert "access rule 'tables' for user 'ann'" in failed["last_error"], failed
        assert "feed.src" in failed["last_error"], failed
        assert _run(admin, "SELECT SUM(n) FROM live.flow") == [(4,)]
        _refused(ann, "SELECT * FROM feed.src", "tables")
    finally:
        _rewrite_rules(work, json.dumps(rules(work)))
        _run(ann, "DROP STREAMING TABLE IF EXISTS live.flow")
        _run(admin, "DROP DATABASE feed CASCADE")
    _sales_unchanged(sales)


def test_dbt_through_the_server_keeps_to_the_rules(secured, sales, tmp_path, monkeypatch):
    """dbt-spark (method thrift) signed in as bob: its queries pass the same checks."""
    from test_dbt import _messages

    dbt = dbt_as(secured, "bob", "sales", tmp_path, monkeypatch)
    shown = dbt("show", "--inline", "SELECT COUNT(*) AS n FROM sales.customers",
                "--output", "json")
    assert shown.success, _messages(shown)
    assert [tuple(row) for row in shown.result.results[0].agate_table.rows] == [(1,)]
    refused = dbt("show", "--inline", "SELECT * FROM secret.payroll", "--output", "json")
    assert not refused.success
    assert "access rule 'tables' for user 'bob'" in _messages(refused), _messages(refused)
    _sales_unchanged(sales)
