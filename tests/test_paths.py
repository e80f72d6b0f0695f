"""Any path a file system accepts, wherever a path goes: the warehouse and its embedded catalog,
LOCATION, CHECKPOINT, the default checkpoint root, LATE ROWS INTO tables, the package's jar and
Delta's jar cache, all in a folder named with a space, a quote, `%`, `#` and a non-ASCII letter;
a copy of the repository in a folder with a space (and nothing beside it) collects its tests.
A successful run logs no ERROR line, also when it replaces its tables."""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

from paths_driver import PROBE
from sql_ext import jars

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
STRANGE = "o sp'ace %20 #x é"
# The package and Delta's jars: no space anywhere in their paths, where Spark would read a path
# with a `#` as a URI with a fragment.
LIBRARY = "lib#1%41'é"
# The forms a path takes when it is URI-encoded once or twice where it should not be.
ENCODED = re.compile(r"%(25|27|23|C3|c3)")


@pytest.fixture(scope="module")
def strange_run(tmp_path_factory):
    """paths_driver.py in its own process, everything it touches under a strange folder name:
    (its RESULT, its whole output, the folder)."""
    top = tmp_path_factory.mktemp("paths")
    folder = top / STRANGE
    folder.mkdir()
    package = top / LIBRARY / "site-packages"
    shutil.copytree(jars.PACKAGE_DIR, package / "sql_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    cache = top / LIBRARY / "jars"
    cache.mkdir()
    for jar in jars.fetched_jars():
        shutil.copy(jar, cache / jar.name)
    env = dict(os.environ, PYTHONPATH=str(package), SQL_EXT_JAR_CACHE=str(cache),
               SQL_EXT_WAREHOUSE=str(folder / "warehouse"))
    # dev.sh test's JVM settings name files under the project: the compiler setting alone, as
    # a default (--driver-java-options would replace the session's own -D options).
    env["PYSPARK_SUBMIT_ARGS"] = ('--conf "spark.driver.defaultJavaOptions=-XX:TieredStopAtLevel=1'
                                  ' -XX:ReservedCodeCacheSize=240m" pyspark-shell')
    done = subprocess.run([sys.executable, str(TESTS / "paths_driver.py"), str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and results, output[-5000:]
    return json.loads(results[-1].removeprefix("RESULT ")), output, folder


@pytest.mark.heavy
@pytest.mark.xdist_group("strange_folder")  # one strange_run: both tests on one worker
def test_streaming_tables_in_a_folder_named_with_quotes_spaces_and_percent(strange_run):
    found, _, folder = strange_run
    library = folder.parent / LIBRARY
    assert found["package"] == str(library / "site-packages" / "sql_ext" / "__init__.py")
    assert found["jars"].split(",") == [
        (library / "site-packages" / "sql_ext" / "jars" / "sql-ext.jar").as_uri(),
        *((library / "jars" / jar.name).as_uri() for jar in jars.fetched_jars())]
    assert found["warehouse"] == f"file:{folder / 'warehouse'}"
    # A LOCATION and a CHECKPOINT given: the rows of the batch query over the same source.
    assert found["counts"] == found["counts_batch"] == [
        ["a", "0", "2", "3.0"], ["a", "1", "2", "12.0"], ["b", "0", "2", "7.0"]]
    # In the warehouse, at the default checkpoint, with LATE ROWS INTO: the late row kept, the
    # panes the watermark 128 closed.
    assert found["late_ids"] == [5]
    assert found["panes"] == [["a", "2024-01-01 00:01:35", "3.0"],
                              ["a", "2024-01-01 00:01:40", "3.0"],
                              ["b", "2024-01-01 00:01:45", "7.0"],
                              ["b", "2024-01-01 00:01:50", "7.0"]]
    counts, panes = found["streams"]["default.counts"], found["streams"]["default.panes"]
    assert counts["checkpoint"] == str(folder / "counts checkpoint")
    assert counts["location"] == f"file:{folder / 'counts'}"
    assert panes["checkpoint"] == str(folder / "warehouse" / "_sql_ext_checkpoints" / "panes")
    assert panes["location"] == f"file:{folder / 'warehouse' / 'panes'}"
    assert {counts["state"], panes["state"]} == {"STOPPED"}
    # Every file where it was meant to go, none under a name encoded once or twice.
    for made in (folder / "counts" / "_delta_log", folder / "counts checkpoint" / "commits",
                 folder / "warehouse" / "_sql_ext_checkpoints" / "panes" / "commits",
                 folder / "warehouse" / "late_rows" / "_delta_log",
                 folder / "warehouse" / "metastore_db" / "service.properties",
                 folder / "warehouse" / "derby.log"):
        assert made.exists(), made
    strays = [str(p) for p in folder.parent.rglob("*") if ENCODED.search(p.name)]
    assert strays == []
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted([STRANGE, LIBRARY])
    # Nothing in the working directory (the folder) but what the driver put there.
    assert sorted(p.name for p in folder.iterdir()) == [
        "counts", "counts checkpoint", "source", "warehouse"]


@pytest.mark.xdist_group("strange_folder")
def test_seed_examples_from_a_strange_folder_rerun_without_an_error_line(strange_run):
    """The examples read their sample data from the package's folder (named with `#`, `%`, a
    quote and `é`) and, run twice, replace their tables (CREATE OR REPLACE TABLE on the embedded
    catalog) without an ERROR line, an exception or a traceback in the output. Only the
    metastore's benign line is dropped: another error of the same logger is printed."""
    found, output, _ = strange_run
    assert found["examples"]["seed_count4_cost"] == ["[0, 4, 10]"]
    assert len(found["examples"]) == 4
    lines = output.splitlines()
    assert len([line for line in lines if f"ERROR HiveAlterHandler: {PROBE}" in line]) == 1
    noise = [line for line in lines if re.search(r"\bERROR\b|Exception|Traceback", line)
             and PROBE not in line]
    assert noise == []


def test_a_copy_of_the_repository_in_a_folder_with_a_space_collects_its_tests(tmp_path):
    """`git archive HEAD` into a folder with a space, nothing beside it (no ../shared): pytest
    collects the copy's own tests (a test file added to the copy is among them)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to archive")
    copy = tmp_path / "sql ext copy"
    copy.mkdir()
    archive = tmp_path / "head.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), "HEAD"], cwd=ROOT,
                   check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(copy, filter="data")
    archive.unlink()
    marker = f"test_only_in_the_copy_{uuid.uuid4().hex[:8]}"
    (copy / "tests" / "test_copy_marker.py").write_text(f"def {marker}():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(copy)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q"], cwd=copy,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert f"tests/test_copy_marker.py::{marker}" in done.stdout
    collected = re.search(r"(\d+) tests? collected", done.stdout)
    assert collected and int(collected.group(1)) > 100, done.stdout[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sql ext copy"]
