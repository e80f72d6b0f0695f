"""Password authentication of `sql-ext thriftserver` (HiveServer2 CUSTOM with the JVM module's
PasswordFileAuthenticator): the right password signs in through PyHive and beeline and runs
windowed SQL; a wrong password, an unknown user or no credentials are refused; the server will
not listen beyond loopback without authentication unless told to."""

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


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A server with --auth password; ann's password is s3cret."""
    work = tmp_path_factory.mktemp("auth")
    passwords = work / "team.passwords"
    cli = [sys.executable, "-m", "sql_ext.cli"]
    added = subprocess.run([*cli, "passwd", str(passwords), "ann", "--password-stdin"],
                           input="s3cret\n", capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    set_password(passwords, "bob", "other")
    assert oct(passwords.stat().st_mode & 0o777) == "0o600"
    port = free_port()
    with open(work / "server.log", "w") as log:
        process = subprocess.Popen(
            [*cli, "thriftserver", "--port", str(port), "--warehouse", str(work / "warehouse"),
             "--auth", "password", "--password-file", str(passwords)],
            stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
    wait_for_port("127.0.0.1", port, timeout=120)
    yield port
    _kill(process, port)


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
