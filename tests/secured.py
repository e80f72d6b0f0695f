"""The security suite's one signed-in server (not a test): `sql-ext thriftserver --auth password`
with admins, an --allow-path folder, an --allow-server address and an access rules file, shared
by tests/test_thrift_auth.py, tests/test_file_access.py and tests/test_row_policies.py (one
xdist group, one worker: the server starts once per run; tests/conftest.py's `secured_server`).
Each module keeps to users and databases of its own; a test that rewrites the rules file puts
the file back as `rules(work)` writes it.

Users (password): ann (s3cret) and bob (other) of tests/test_thrift_auth.py; dan (d4n) of the
file access tests; eve (3ve) of the row filter and column mask tests; root (admin-pw, --admin)
and ops (ops-pw, the rules file's admin).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyhive import hive

from sql_ext.server.auth import set_password
from sql_ext.server.thrift import free_port, wait_for_port

PASSWORDS = {"ann": "s3cret", "bob": "other", "dan": "d4n", "eve": "3ve", "root": "admin-pw",
             "ops": "ops-pw"}

# The Kafka address every user may name (--allow-server); dan may name 127.0.0.2:9092 too.
ALLOWED_SERVER = "127.0.0.1:9092"


def rules(work: Path) -> dict:
    """The server's access rules. ann owns the database team, reads and appends to
    sales.orders and runs streams in live; bob (the group analysts) reads the database sales;
    dan owns dan_db and has his folders under <work>/files; eve reads rp's tables through their
    rules' filters and masks (tests/test_row_policies.py rewrites hers) and owns eve_db."""
    files = work / "files"
    return {
        "admins": ["ops"],
        "groups": {"analysts": ["bob"]},
        "tables": [
            {"user": "ann", "database": "team", "privileges": ["OWNERSHIP"]},
            {"user": "ann", "database": "sales", "table": "orders",
             "privileges": ["SELECT", "INSERT"]},
            {"user": "ann", "database": "live", "privileges": ["STREAM", "SELECT"]},
            {"group": "analysts", "database": "sales", "privileges": ["SELECT"]},
            {"user": "dan", "database": "dan_db", "privileges": ["OWNERSHIP"]},
            {"user": "dan", "database": "files_db", "privileges": ["SELECT"]},
            {"user": "eve", "database": "rp", "table": "people", "privileges": ["SELECT"],
             "columns": [{"name": "secret", "allow": False}]},
            {"user": "eve", "database": "rp", "table": "orders",
             "privileges": ["SELECT", "INSERT"],
             "filter": "region = 'EU' OR seller = current_user()",
             "columns": [{"name": "card", "mask": "concat('****', substr(card, -4))"},
                         {"name": "ssn", "allow": False}]},
            {"user": "eve", "database": "rp", "privileges": ["SELECT"]},
            {"user": "eve", "database": "eve_db", "privileges": ["OWNERSHIP"]},
        ],
        "locations": [
            {"user": "dan", "path": str(files / "drop"), "privileges": ["WRITE FILES"]},
            {"user": "dan", "path": str(files / "shared"), "privileges": ["READ FILES"]},
            {"user": "dan", "path": str(files / "mine"),
             "privileges": ["READ FILES", "WRITE FILES", "CREATE EXTERNAL TABLE"]},
        ],
        "servers": [{"user": "dan", "address": r"127\.0\.0\.2:9092", "privileges": ["CONNECT"]}],
    }


# The operator's settings of the server: a secret in its properties file (as a team keeps an
# object store's key), and one setting the file and a --conf flag both give (--conf wins).
SECRET_SETTING = ("spark.hadoop.fs.s3a.secret.key", "s3-secret-of-the-operator")
PROBE_SETTING = "spark.sqlext.probe.origin"
DRIVER_MEMORY = "1100m"


def start(work: Path) -> tuple[subprocess.Popen, int]:
    """The server, its folders under `work`: (process, port)."""
    (work / "landing").mkdir()
    for folder in ("drop", "shared", "mine", "outside"):
        (work / "files" / folder).mkdir(parents=True)
    passwords = work / "team.passwords"
    cli = [sys.executable, "-m", "sql_ext.cli"]
    added = subprocess.run([*cli, "passwd", str(passwords), "ann", "--password-stdin"],
                           input=PASSWORDS["ann"] + "\n", capture_output=True, text=True,
                           timeout=60)
    assert added.returncode == 0, added.stderr
    for user, password in PASSWORDS.items():
        if user != "ann":
            set_password(passwords, user, password)
    (work / "rules.json").write_text(json.dumps(rules(work)))
    assert oct(passwords.stat().st_mode & 0o777) == "0o600"
    (work / "spark.properties").write_text(f"{SECRET_SETTING[0]}  {SECRET_SETTING[1]}\n"
                                           f"{PROBE_SETTING}=file\n")
    port = free_port()
    with open(work / "server.log", "w") as log:
        process = subprocess.Popen(
            [*cli, "thriftserver", "--port", str(port), "--warehouse", str(work / "warehouse"),
             "--auth", "password", "--password-file", str(passwords), "--admin", "root",
             "--allow-path", str(work / "landing"), "--allow-server", ALLOWED_SERVER,
             "--access-rules", str(work / "rules.json"),
             "--properties-file", str(work / "spark.properties"),
             "--conf", f"{PROBE_SETTING}=conf", "--driver-memory", DRIVER_MEMORY],
            stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
    wait_for_port("127.0.0.1", port, timeout=120)
    return process, port


def as_user(port: int, user: str):
    """A PyHive cursor signed in as `user`."""
    return hive.connect(host="127.0.0.1", port=port, username=user, password=PASSWORDS[user],
                        auth="CUSTOM").cursor()


def run(cursor, sql: str):
    cursor.execute(sql)
    return cursor.fetchall() if cursor.description else None


def refused(cursor, sql: str, rule: str, user: str, *naming: str) -> str:
    """`sql` is refused naming `rule`, the user and each of `naming`; the server answers the
    next statement. The refusal's message."""
    with pytest.raises(Exception) as error:
        run(cursor, sql)
    # PyHive shows the server's status as a repr: its quotes may come escaped.
    message = str(error.value).replace("\\\\'", "'").replace("\\'", "'")
    assert f"access rule '{rule}' for user '{user}'" in message, (sql, message[:3000])
    assert all(word in message for word in naming), (sql, naming, message[:3000])
    assert "Traceback" not in message and "\tat " not in message, message[:3000]
    assert run(cursor, "SELECT 1") == [(1,)]
    return message


def dbt_as(port: int, user: str, schema: str, tmp_path: Path, monkeypatch):
    """dbt-spark (method thrift) on the server signed in as `user`, in a copy of the example
    project whose models go to `schema`: a function of dbt's arguments, after `dbt deps`."""
    from dbt.cli.main import dbtRunner
    from test_dbt import _messages, _project

    project = _project(tmp_path, port, monkeypatch, schema=schema)
    profiles = project / "profiles.yml"
    profiles.write_text(profiles.read_text().replace(
        "      connect_retries: 3\n",
        f"      connect_retries: 3\n      user: {user}\n      password: {PASSWORDS[user]}\n"
        "      auth: CUSTOM\n", 1))

    def dbt(*args):
        return dbtRunner().invoke([*args, "--project-dir", str(project), "--profiles-dir",
                                   str(project), "--target", "thrift"])

    deps = dbt("deps")
    assert deps.success, _messages(deps)
    return dbt


def rewrite_rules(work: Path, content: str) -> None:
    """The server's rules file with `content`, its time moved on (the server reads it again)."""
    path = work / "rules.json"
    before = path.stat().st_mtime
    path.write_text(content)
    os.utime(path, (before + 2, before + 2))
