"""Password authentication of `sql-ext thriftserver` (HiveServer2 CUSTOM with the JVM module's
PasswordFileAuthenticator): the right password signs in through PyHive and beeline and runs
windowed SQL; a wrong password, an unknown user or no credentials are refused; the server will
not listen beyond loopback without authentication unless told to.

Least privilege (io.sqlext.access): a signed-in user who is not an admin is refused, naming the
rule, whatever reaches the JVM or the operating system, loads code, changes a setting outside
the allow-list or points a path outside the server's folders; an admin (--admin) may; after
each refusal the server answers the next statement and no table changed."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from pyhive import hive
from test_catalog import _kill

from sql_ext.server.auth import hash_line, set_password
from sql_ext.server.thrift import free_port, wait_for_port

WINDOWED = ("SELECT k, WINDOW_ID() AS w, COUNT(*) AS n FROM VALUES ('a'), ('a'), ('b'), ('a') "
            "AS t(k) WINDOW TUMBLING COUNT(2) OVER (PARTITION BY k)")


# One server for the module's tests (a module fixture), on one worker.
pytestmark = pytest.mark.xdist_group("secured_server")


@pytest.fixture(scope="module")
def secured_server(tmp_path_factory):
    """A server with --auth password; ann's password is s3cret; root is its admin; besides its
    warehouse, users' paths may point into <work>/landing. (port, work folder)"""
    work = tmp_path_factory.mktemp("auth")
    (work / "landing").mkdir()
    passwords = work / "team.passwords"
    cli = [sys.executable, "-m", "sql_ext.cli"]
    added = subprocess.run([*cli, "passwd", str(passwords), "ann", "--password-stdin"],
                           input="s3cret\n", capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    set_password(passwords, "bob", "other")
    set_password(passwords, "root", "admin-pw")
    assert oct(passwords.stat().st_mode & 0o777) == "0o600"
    port = free_port()
    with open(work / "server.log", "w") as log:
        process = subprocess.Popen(
            [*cli, "thriftserver", "--port", str(port), "--warehouse", str(work / "warehouse"),
             "--auth", "password", "--password-file", str(passwords), "--admin", "root",
             "--allow-path", str(work / "landing")],
            stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
    wait_for_port("127.0.0.1", port, timeout=120)
    yield port, work
    _kill(process, port)


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


def _refused(cursor, sql, rule):
    """`sql` is refused naming `rule` and the user; the server answers the next statement."""
    with pytest.raises(Exception) as error:
        _run(cursor, sql)
    message = str(error.value)
    assert f"access rule '{rule}' for user 'ann'" in message, message
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
    _refused(ann, f"SELECT * FROM delta.`{outside / 'kept'}`", "paths")
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
