"""Files only through their tables, on the security suite's signed-in server (tests/secured.py):
for dan, a user who is not an admin, no statement names a path in the warehouse, a database's
folder, a table's folder (managed or external, wherever it lies) or a streaming table's
checkpoint, nor a folder that holds one: in every file format, in every statement that takes a
path, however the path is spelt (`..`, a link, a `file:` URI, a trailing slash, a glob). Other
folders are his only where a `locations` rule gives the access the statement needs (READ FILES,
WRITE FILES, CREATE EXTERNAL TABLE), or --allow-path gives every user; the Kafka servers his
tables name, where a `servers` rule or --allow-server does. An admin may do all of it. After
each refusal the server answers the next statement, and no table changed."""

from __future__ import annotations

import pytest
from secured import as_user, refused, run

pytestmark = pytest.mark.xdist_group("secured_server")

FORMATS = ("parquet", "delta", "json", "csv", "text", "orc", "avro", "binaryFile", "xml")


@pytest.fixture(scope="module")
def catalog(secured_server):
    """The admin's tables and folders (paths by name), and dan's own tables."""
    port, work = secured_server
    files = work / "files"
    root = as_user(port, "root")
    run(root, "CREATE DATABASE IF NOT EXISTS files_db")
    run(root, "CREATE TABLE files_db.managed USING DELTA AS SELECT id, id * 2 AS v FROM range(5)")
    run(root, "CREATE TABLE files_db.pq USING PARQUET AS SELECT 42 AS a")
    run(root, f"CREATE TABLE files_db.ext USING DELTA LOCATION '{files / 'shared' / 'ext'}' "
              "AS SELECT 'e' AS name")
    run(root, f"CREATE STREAMING TABLE files_db.live CHECKPOINT '{files / 'mine' / 'ck'}' AS "
              "SELECT COUNT(*) AS n FROM STREAM(files_db.managed) WINDOW TUMBLING COUNT(2)")
    run(root, f"CREATE DATABASE IF NOT EXISTS out_db LOCATION '{files / 'outside' / 'out_db'}'")
    run(root, "CREATE TABLE out_db.t USING DELTA AS SELECT 1 AS one")
    (files / "shared" / "data.csv").write_text("a,b\n1,2\n")
    (files / "outside" / "data.csv").write_text("secret,3\n")
    (work / "landing" / "data.csv").write_text("x\n")
    (files / "shared" / "escape").symlink_to(files / "outside", target_is_directory=True)
    dan = as_user(port, "dan")
    run(dan, "CREATE DATABASE IF NOT EXISTS dan_db")
    run(dan, "CREATE TABLE dan_db.own USING DELTA AS SELECT 1 AS a")
    run(dan, "CREATE TABLE dan_db.lines (value STRING) STORED AS TEXTFILE")
    run(dan, "CREATE TABLE dan_db.parted (a INT, k INT) USING PARQUET PARTITIONED BY (k)")
    warehouse = work / "warehouse"
    return dict(root=root, files=files, warehouse=warehouse,
                managed=warehouse / "files_db.db" / "managed",
                pq=warehouse / "files_db.db" / "pq", ext=files / "shared" / "ext",
                checkpoint=files / "mine" / "ck", database=warehouse / "files_db.db",
                out_db=files / "outside" / "out_db")


def _unchanged(catalog):
    root = catalog["root"]
    assert run(root, "SELECT COUNT(*), SUM(v) FROM files_db.managed") == [(5, 20)]
    assert run(root, "SELECT * FROM files_db.pq") == [(42,)]
    assert run(root, "SELECT * FROM files_db.ext") == [("e",)]
    assert run(root, "SELECT * FROM out_db.t") == [(1,)]
    assert len(run(root, "DESCRIBE HISTORY files_db.managed")) == 1  # no new version
    assert (catalog["checkpoint"] / "commits").is_dir()


def test_a_table_s_files_are_refused_by_path_in_every_format(secured_server, catalog):
    port, _ = secured_server
    dan = as_user(port, "dan")
    targets = {  # a path -> what the refusal names
        catalog["managed"]: "table files_db.managed",
        catalog["managed"] / "_delta_log": "table files_db.managed",
        catalog["warehouse"]: "the warehouse",
        catalog["database"]: "database files_db",
        catalog["ext"]: "table files_db.ext",
        catalog["checkpoint"]: "the checkpoint of streaming table files_db.live",
        catalog["out_db"]: "database out_db",
    }
    for fmt in FORMATS:
        for path, owner in targets.items():
            refused(dan, f"SELECT * FROM {fmt}.`{path}`", "paths", "dan", owner)
    managed = catalog["managed"]
    spellings = [f"{managed}/", f"file:{managed}", f"file://{managed}",
                 f"{managed}/../managed", f"{managed}/part-*",
                 f"{catalog['files']}/shared/../../warehouse/files_db.db/managed",
                 f"{managed}/_delta_log/00000000000000000000.json"]
    for spelling in spellings:
        refused(dan, f"SELECT * FROM parquet.`{spelling}`", "paths", "dan",
                "table files_db.managed")
    # A glob stands for the folder before its pattern: here the database's.
    refused(dan, f"SELECT * FROM parquet.`{catalog['database']}/man*`", "paths", "dan",
            "database files_db")
    # A folder that holds a table's folder: the files folder holds files_db.ext.
    refused(dan, f"SELECT * FROM text.`{catalog['files']}`", "paths", "dan",
            "a folder that holds the folder of")
    # A link inside an allowed folder to a folder without a rule is that folder.
    refused(dan, f"SELECT * FROM csv.`{catalog['files']}/shared/escape/data.csv`", "paths",
            "dan", "no locations rule gives dan READ FILES there")
    # The admin: no path is refused (a format that does not fit the files may still fail).
    root = catalog["root"]
    for fmt, path in [(fmt, catalog["managed"]) for fmt in FORMATS] + \
            [("binaryFile", path) for path in targets]:
        try:
            run(root, f"SELECT * FROM {fmt}.`{path}` LIMIT 1")
        except Exception as error:  # noqa: BLE001 - Spark's own errors of the format
            assert "access rule" not in str(error), (fmt, path, str(error)[:2000])
    assert run(root, f"SELECT COUNT(*) FROM delta.`{managed}`") == [(5,)]
    assert run(root, f"SELECT COUNT(*) FROM text.`{managed}/_delta_log`")[0][0] >= 1
    _unchanged(catalog)


# Statements that take a path, for any folder.
ANY_FOLDER = (
    "CREATE TABLE dan_db.x USING delta LOCATION '{p}'",
    "CREATE TABLE dan_db.x USING delta OPTIONS (path '{p}')",
    "CREATE TABLE dan_db.x USING parquet LOCATION '{p}' AS SELECT 1 AS a",
    "CREATE TEMPORARY VIEW stolen USING parquet OPTIONS (path '{p}')",
    "INSERT OVERWRITE DIRECTORY '{p}' USING parquet SELECT 7 AS a",
    "LOAD DATA LOCAL INPATH '{p}' INTO TABLE dan_db.lines",
    "CREATE STREAMING TABLE dan_db.s CHECKPOINT '{p}' AS SELECT COUNT(*) AS n "
    "FROM STREAM(files_db.managed) WINDOW TUMBLING COUNT(2)",
    "CREATE STREAMING TABLE dan_db.s LOCATION '{p}' AS SELECT COUNT(*) AS n "
    "FROM STREAM(files_db.managed) WINDOW TUMBLING COUNT(2)",
    "CONVERT TO DELTA parquet.`{p}`",
    "CREATE TABLE delta.`{p}/clone` SHALLOW CLONE dan_db.own",
    "REFRESH '{p}'",
    "CREATE DATABASE dan_other LOCATION '{p}'",
    "ALTER TABLE dan_db.own SET LOCATION '{p}'",
    "ALTER TABLE dan_db.parted ADD PARTITION (k=1) LOCATION '{p}'",
)
# Delta's statements on a Delta table named by its path.
DELTA_TABLE = (
    "CREATE STREAMING TABLE dan_db.s AS SELECT COUNT(*) AS n "
    "FROM STREAM(delta.`{p}`) WINDOW TUMBLING COUNT(2)",
    "SELECT COUNT(*) AS n FROM delta.`{p}` WINDOW TUMBLING COUNT(2)",
    "SELECT * FROM delta.`{p}` VERSION AS OF 0",
    "DESCRIBE HISTORY delta.`{p}`",
    "DESCRIBE HISTORY '{p}'",
    "DESCRIBE DETAIL '{p}'",
    "VACUUM delta.`{p}`",
    "VACUUM '{p}'",
    "RESTORE TABLE delta.`{p}` TO VERSION AS OF 0",
    "OPTIMIZE delta.`{p}`",
    "CREATE TABLE dan_db.c SHALLOW CLONE delta.`{p}`",
    "SELECT * FROM table_changes_by_path('{p}', 0)",
    "GENERATE symlink_format_manifest FOR TABLE delta.`{p}`",
    "DELETE FROM delta.`{p}` WHERE TRUE",
    "ALTER TABLE delta.`{p}` SET TBLPROPERTIES ('x' = '1')",
)


def test_every_path_statement_is_refused_on_a_table_s_folder(secured_server, catalog):
    port, _ = secured_server
    dan = as_user(port, "dan")
    for target, owner, statements in (
            (catalog["managed"], "table files_db.managed", ANY_FOLDER + DELTA_TABLE + (
                "INSERT INTO delta.`{p}` SELECT 9, 9", "UPDATE delta.`{p}` SET v = 0")),
            (catalog["ext"], "table files_db.ext", ANY_FOLDER + DELTA_TABLE),
            (catalog["checkpoint"], "streaming table files_db.live", ANY_FOLDER),
            (catalog["database"], "database files_db", ANY_FOLDER)):
        for statement in statements:
            refused(dan, statement.format(p=target), "paths", "dan", owner)
    # The admin may run them (on a table of his own, which they change).
    root = catalog["root"]
    run(root, "CREATE TABLE files_db.scrap USING DELTA AS SELECT id, id AS v FROM range(3)")
    scrap = catalog["database"] / "scrap"
    for statement in ("SELECT COUNT(*) AS n FROM delta.`{p}` WINDOW TUMBLING COUNT(2)",
                      "DESCRIBE HISTORY '{p}'", "OPTIMIZE delta.`{p}`",
                      "INSERT INTO delta.`{p}` SELECT 9, 9", "UPDATE delta.`{p}` SET v = 0",
                      "RESTORE TABLE delta.`{p}` TO VERSION AS OF 0", "VACUUM '{p}'",
                      "INSERT OVERWRITE DIRECTORY '{p}/dump' USING parquet SELECT 7 AS a",
                      "CREATE TEMPORARY VIEW scrapped USING parquet OPTIONS (path '{p}')"):
        run(root, statement.format(p=scrap))
    # A folder of dan's own holds the checkpoint: no table may take it.
    refused(dan, f"CREATE TABLE dan_db.big USING DELTA LOCATION '{catalog['files']}/mine' "
                 "AS SELECT 1 AS a", "paths", "dan",
            "the checkpoint of streaming table files_db.live")
    assert not (catalog["files"] / "mine" / "_delta_log").exists()
    _unchanged(catalog)


def test_locations_rules_give_each_access_where_they_say(secured_server, catalog):
    port, _ = secured_server
    dan = as_user(port, "dan")
    files = catalog["files"]
    # shared: READ FILES only.
    assert run(dan, f"SELECT COUNT(*) FROM csv.`{files}/shared/data.csv`") == [(2,)]
    refused(dan, f"INSERT OVERWRITE DIRECTORY '{files}/shared/out' USING csv SELECT 1",
            "paths", "dan", "WRITE FILES is not among the privileges", "(READ FILES)")
    refused(dan, f"CREATE TABLE dan_db.t USING DELTA LOCATION '{files}/shared/t' AS SELECT 1 AS a",
            "paths", "dan", "CREATE EXTERNAL TABLE is not among the privileges")
    # drop: WRITE FILES only (a checkpoint is a write).
    run(dan, f"INSERT OVERWRITE DIRECTORY '{files}/drop/out' USING csv SELECT 1 AS a")
    assert any((files / "drop" / "out").glob("part-*"))
    refused(dan, f"SELECT * FROM csv.`{files}/drop/out`", "paths", "dan",
            "READ FILES is not among the privileges", "(WRITE FILES)")
    run(dan, f"CREATE STREAMING TABLE dan_db.counted CHECKPOINT '{files}/drop/ck' AS SELECT "
             "COUNT(*) AS n FROM STREAM(files_db.managed) WINDOW TUMBLING COUNT(2)")
    assert run(dan, "SELECT SUM(n) FROM dan_db.counted") == [(4,)]
    # The checkpoint is now the streaming table's: no longer dan's files by path.
    refused(dan, f"SELECT * FROM text.`{files}/drop/ck/commits`", "paths", "dan",
            "the checkpoint of streaming table dan_db.counted")
    # mine: every file access; an external table there is then a table like any other.
    run(dan, f"CREATE TABLE dan_db.ext USING DELTA LOCATION '{files}/mine/t' AS SELECT 5 AS a")
    assert run(dan, "SELECT * FROM dan_db.ext") == [(5,)]
    refused(dan, f"SELECT * FROM delta.`{files}/mine/t`", "paths", "dan", "table dan_db.ext")
    # A table may be created again at its own folder (CREATE OR REPLACE).
    run(dan, f"CREATE OR REPLACE TABLE dan_db.ext USING DELTA LOCATION '{files}/mine/t' AS "
             "SELECT 6 AS a")
    assert run(dan, "SELECT * FROM dan_db.ext") == [(6,)]
    # No rule: refused; --allow-path: everyone's.
    refused(dan, f"SELECT * FROM csv.`{files}/outside/data.csv`", "paths", "dan",
            "no locations rule gives dan READ FILES there", "--allow-path")
    refused(dan, f"SELECT * FROM csv.`{files}/shared/../outside/data.csv`", "paths", "dan")
    landing = catalog["warehouse"].parent / "landing"
    assert run(dan, f"SELECT COUNT(*) FROM text.`{landing}/data.csv`") == [(1,)]
    # Another user has no rule for dan's folders.
    refused(as_user(port, "bob"), f"SELECT * FROM csv.`{files}/shared/data.csv`", "paths",
            "bob", "no locations rule gives bob READ FILES there")
    # The admin may do all of it.
    root = catalog["root"]
    run(root, f"INSERT OVERWRITE DIRECTORY '{files}/outside/dump' USING csv SELECT 1 AS a")
    assert run(root, f"SELECT COUNT(*) FROM csv.`{files}/outside/data.csv`") == [(1,)]
    run(dan, "DROP STREAMING TABLE dan_db.counted")
    _unchanged(catalog)


def test_kafka_tables_connect_only_where_a_rule_says(secured_server, catalog):
    port, _ = secured_server
    dan = as_user(port, "dan")
    table = ("CREATE TABLE dan_db.{name} (v STRING) USING kafka OPTIONS "
             "(kafka.bootstrap.servers '{servers}', subscribe 't'{more})")
    password = "p4ss-w0rd"
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f"username=\\'u\\' password=\\'{password}\\';")
    run(dan, table.format(name="k1", servers="127.0.0.2:9092", more=(
        ", kafka.security.protocol 'SASL_PLAINTEXT', kafka.sasl.mechanism 'PLAIN', "
        f"kafka.sasl.jaas.config '{jaas}'")))
    run(dan, table.format(name="k2", servers="127.0.0.1:9092", more=""))  # --allow-server
    refused(dan, table.format(name="k3", servers="127.0.0.2:9092,10.9.8.7:9092", more=""),
            "network", "dan", "connects to 10.9.8.7:9092: no servers rule gives dan CONNECT")
    for option in ("kafka.interceptor.classes", "kafka.sasl.login.callback.handler.class",
                   "kafka.config.providers", "kafka.sasl.oauthbearer.token.endpoint.url"):
        refused(dan, table.format(name="k4", servers="127.0.0.2:9092",
                                  more=f", {option} 'x'"), "network", "dan", option)
    refused(dan, table.format(name="k4", servers="127.0.0.2:9092", more=(
        ", kafka.sasl.jaas.config 'com.sun.security.auth.module.JndiLoginModule required;'")),
        "network", "dan", "JndiLoginModule")
    refused(dan, table.format(name="k4", servers="127.0.0.2:9092", more=(
        f", kafka.ssl.truststore.location '{catalog['managed']}/_delta_log/x'")),
        "paths", "dan", "table files_db.managed")
    # The password is kept, and shown to nobody.
    for user in ("dan", "root"):
        shown = str(run(as_user(port, user), "SHOW CREATE TABLE dan_db.k1")) + str(
            run(as_user(port, user), "DESCRIBE TABLE EXTENDED dan_db.k1")) + str(
            run(as_user(port, user), "SHOW TBLPROPERTIES dan_db.k1"))
        assert password not in shown and "redacted" in shown, shown
    # An admin may name any server.
    run(catalog["root"], table.format(name="k5", servers="10.9.8.7:9092", more=""))
    _unchanged(catalog)


def test_delta_s_own_reads_and_writes_of_a_user_s_tables_pass(secured_server, catalog):
    """What Delta and Spark do inside a statement the checks passed (a snapshot's log reads, a
    CTAS's writes, MERGE's rewrite of files) is the server's own, not the user's paths."""
    port, _ = secured_server
    dan = as_user(port, "dan")
    run(dan, "CREATE TABLE dan_db.work USING DELTA AS SELECT id, id % 3 AS k FROM range(10)")
    run(dan, "CREATE TABLE dan_db.work_pq USING PARQUET AS SELECT * FROM dan_db.work")
    run(dan, "DELETE FROM dan_db.work WHERE k = 0")
    run(dan, "UPDATE dan_db.work SET k = 9 WHERE id = 1")
    run(dan, "MERGE INTO dan_db.work t USING dan_db.work_pq s ON t.id = s.id "
             "WHEN NOT MATCHED THEN INSERT *")
    run(dan, "OPTIMIZE dan_db.work")
    run(dan, "INSERT OVERWRITE dan_db.work_pq SELECT * FROM dan_db.work WHERE id < 3")
    assert run(dan, "SELECT COUNT(*), SUM(k) FROM dan_db.work") == [(10, 17)]
    assert run(dan, "SELECT COUNT(*) FROM dan_db.work_pq") == [(3,)]
    assert run(dan, "SELECT COUNT(*) FROM dan_db.work VERSION AS OF 0") == [(10,)]
    _unchanged(catalog)


def test_a_table_is_created_again_at_its_own_folder_however_it_is_named(secured_server,
                                                                         catalog):
    """CREATE OR REPLACE names the table's own folder: in any letter case, without its
    database (the session's current one)."""
    port, _ = secured_server
    dan = as_user(port, "dan")
    mine = catalog["files"] / "mine" / "again"
    run(dan, f"CREATE TABLE dan_db.again USING DELTA LOCATION '{mine}' AS SELECT 1 AS a")
    run(dan, f"CREATE OR REPLACE TABLE DAN_DB.Again USING DELTA LOCATION '{mine}' AS "
             "SELECT 2 AS a")
    run(dan, "USE dan_db")
    run(dan, f"CREATE OR REPLACE TABLE again USING DELTA LOCATION '{mine}' AS SELECT 3 AS a")
    assert run(dan, "SELECT * FROM dan_db.again") == [(3,)]
    refused(dan, f"CREATE OR REPLACE TABLE other USING DELTA LOCATION '{mine}' AS "
                 "SELECT 4 AS a", "paths", "dan", "table dan_db.again")
