"""The documentation agrees with the code and with itself, checked mechanically: SHOW STREAMS'
columns wherever a page lists them, the versions of Spark, Delta, sqlglot, Scala, Java, dbt,
Kafka, Python and sql-ext itself, the defaults of the settings page (and the other pages that
repeat them), the flags pages give the sql-ext command, dev.sh's commands, the servers' start
lines, the settings users may SET, and every figure one page quotes from another's
measurement.

No Spark session: each check reads the files (and calls plain Python of sql_ext)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sql_ext import jars
from sql_ext.cli import build_parser
from sql_ext.metastore import catalog_conf
from sql_ext.sql.contract import STREAM_COLUMNS
from sql_ext.version import __version__

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def read(relative: str) -> str:
    return (ROOT / relative).read_text()


def flat(text: str) -> str:
    """Text with every run of white space made one space: a figure may wrap across lines."""
    return " ".join(text.split())


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


# -- SHOW STREAMS' columns ---------------------------------------------------------------------

def column_lists(text: str) -> list[list[str]]:
    """The lists of SHOW STREAMS columns in `text`: runs of column names (in prose or code, at
    most 80 characters apart once white space is folded, each name once: a name again starts
    the prose after the list; or the first cells of consecutive table rows) that hold at least
    five names, three of them with an underscore. Shorter runs are mentions (`rows_in` in a
    sentence), not lists."""
    runs = []
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, STREAM_COLUMNS)) + r")(?![\w-])")
    # Prose and code: a table's rows are read below, by their first cells.
    folded = flat("\n".join(line for line in text.splitlines()
                            if not line.lstrip().startswith("|")))
    current, last_end = [], None
    for match in pattern.finditer(folded):
        if current and (match.start() - last_end > 80 or match.group(1) in current):
            runs.append(current)
            current = []
        current.append(match.group(1))
        last_end = match.end()
    runs.append(current)
    table = []
    for line in text.splitlines() + [""]:
        cell = line.split("|")[1] if line.lstrip().startswith("|") else ""
        named = re.findall(r"`?([a-z_]+)`?", cell)
        if named and all(column in STREAM_COLUMNS for column in named):
            table.extend(named)  # `rows_in`, `rows_out`: one row for two columns
        else:
            runs.append(table)
            table = []
    return [run for run in runs
            if len(set(run)) >= 5 and sum("_" in column for column in set(run)) >= 3]


def test_every_list_of_show_streams_columns_is_the_contract_s():
    """A page that lists SHOW STREAMS' columns lists the contract's, all of them, in its order
    (sql_ext/sql/contract.json, which the JVM's SHOW STREAMS reads: tests/test_contract.py)."""
    lists = {name(page): column_lists(page.read_text()) for page in PAGES}
    assert lists["docs/reference/streaming-tables.md"], "the reference lists no columns any more"
    wrong = {page: found for page, runs in lists.items() for found in runs
             if found != list(STREAM_COLUMNS)}
    assert not wrong, f"SHOW STREAMS has {list(STREAM_COLUMNS)}; these pages list {wrong}"


def test_a_list_that_leaves_out_a_column_is_found():
    """The check above is a check: the reference's list without `owner` is a list, and wrong."""
    text = read("docs/reference/streaming-tables.md").replace(", `owner`", "")
    found = column_lists(text)
    assert found and found[0] == [c for c in STREAM_COLUMNS if c != "owner"]


# -- versions ----------------------------------------------------------------------------------

def pinned(package: str) -> str:
    """The version python/constraints.txt pins, the one dev.sh installs and the suite runs."""
    return re.search(rf"^{re.escape(package)}==(\S+)$", read("python/constraints.txt"),
                     re.M).group(1)


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def dependency(package: str) -> str:
    """pyproject.toml's requirement of `package`, as written (`pyspark>=4.2.0,<4.3`)."""
    return re.search(rf'"({re.escape(package)}(?:\[[^\]]*\])?[<>=~!][^"]*)"',
                     read("pyproject.toml")).group(1)


SPARK, DELTA, SQLGLOT = pinned("pyspark"), pinned("delta-spark"), pinned("sqlglot")
SCALA = minor(re.search(r'scalaVersion := "([\d.]+)"', read("build.sbt")).group(1))
JAVA = re.search(r'"-release", "(\d+)"', read("build.sbt")).group(1)
DBT = minor(re.search(r"dbt-core~=([\d.]+)", dependency("dbt-core")).group(1))
KAFKA_CLIENTS = next(v for _, artifact, v in jars.KAFKA_ARTIFACTS if artifact == "kafka-clients")
KAFKA_BROKER = re.search(r'"kafka_2\.13", "([\d.]+)"', read("tests/kafka_broker.py")).group(1)
PYTHON = re.search(r'requires-python = ">=([\d.]+)"', read("pyproject.toml")).group(1)


def ours(version: str) -> set[str]:
    """How a page may write `version`: whole, its minor release, or the minor with `.x`."""
    return {version, minor(version), minor(version) + ".x"}


# Each component: a pattern whose group is a version a page gives it, and the versions that are
# ours. A version outside them is a claim to check.
VERSIONS = {
    "Spark": (r"\b(?:Apache Spark|Spark|pyspark|PySpark)\s+([3-5]\.\d+(?:\.\d+)?(?:\.x)?)"
              r"(?![\w.]*\d)", ours(SPARK)),
    "Delta": (r"\b(?:Delta Lake|Delta|delta-spark)\s+(\d\.\d+(?:\.\d+)?(?:\.x)?)(?![\w.]*\d)",
              ours(DELTA)),
    "sqlglot": (r"\bsqlglot\s+(\d+\.\d+(?:\.\d+)?(?:\.x)?)", ours(SQLGLOT)),
    "Scala": (r"(?:\bScala\s+|_)(2\.1\d)\b", {SCALA}),
    "Java": (r"\b(?:Java|JDK)\s+(\d+)\b", {JAVA}),
    "dbt": (r"\bdbt(?:-core|-spark)?\s+(\d+\.\d+(?:\.\d+)?)", ours(DBT + ".0")),
    "kafka-clients": (r"kafka-clients[\s-]+(\d+\.\d+\.\d+)", {KAFKA_CLIENTS}),
    "Spark's Kafka connector": (r"spark-(?:sql|token-provider)-kafka-0-10(?:_[\d.]+)?[\s-]+"
                                r"(\d\.\d+\.\d+)", {SPARK}),
    "Kafka broker": (r"\bKafka\s+(\d\.\d+(?:\.\d+)?)\b", ours(KAFKA_BROKER)),
    "Python": (r"\bPython\s+(3\.\d+)", {PYTHON}),
    "sql-ext's wheel": (r"sql_ext-(\d+\.\d+\.\d+)-py3", {__version__}),
}
# Other releases a page discusses on purpose: compatibility.md why pyspark 4.2.1 is not used,
# Spark 4.1 and 4.3's real-time mode, Delta 4.4.1's Python package; testing.md Java 25 measured
# against 17.
DISCUSSED = {("docs/compatibility.md", "Spark"): {"4.1", "4.1.0", "4.2.1", "4.3", "4.3.0"},
             ("docs/compatibility.md", "Delta"): {"4.4.1"},
             ("docs/testing.md", "Java"): {"25"}}


def test_the_versions_the_pages_give_are_the_defined_ones():
    """Every version a page gives Spark, Delta, sqlglot, Scala, Java, dbt, Kafka (client,
    connector, broker), Python or the wheel is the one the build defines (constraints.txt,
    pyproject.toml, build.sbt, sql_ext/jars.py, tests/kafka_broker.py, sql_ext/version.py), or
    one of the other releases that page discusses."""
    wrong = []
    seen = {component: 0 for component in VERSIONS}
    for page in PAGES:
        text = flat(page.read_text())
        for component, (pattern, defined) in VERSIONS.items():
            discussed = DISCUSSED.get((name(page), component), set())
            for match in re.finditer(pattern, text):
                seen[component] += 1
                if match.group(1) not in defined | discussed:
                    wrong.append(f"{name(page)}: {component} {match.group(1)} ({match.group(0)!r};"
                                 f" defined: {sorted(defined)})")
    assert not wrong, "\n".join(wrong)
    # sqlglot's version is only in compatibility.md's table (the test below).
    assert all(n for c, n in seen.items() if c != "sqlglot"), f"versions found: {seen}"


def test_a_version_from_elsewhere_is_found():
    """The version check is a check: Spark 4.1 on the README (where no page discusses it) and a
    wheel of another version are wrong."""
    pattern, defined = VERSIONS["Spark"]
    found = re.search(pattern, "needs Spark 4.1 and Delta 4.4").group(1)
    assert found == "4.1" and found not in defined | DISCUSSED.get(("README.md", "Spark"), set())
    pattern, defined = VERSIONS["sql-ext's wheel"]
    assert re.search(pattern, "sql_ext-9.9.9-py3-none-any.whl").group(1) not in defined


def test_the_code_defines_each_version_once():
    """The places that repeat a version agree: sql_ext/jars.py's Spark and Delta are the pinned
    pyspark's and delta-spark's, its artifacts' Scala is build.sbt's, the build's version is
    the package's."""
    assert jars.SPARK_VERSION == SPARK and jars.DELTA_VERSION == DELTA
    assert jars.SCALA_SUFFIX == f"_{minor(SPARK)}_{SCALA}"
    assert re.search(r'version := "([\d.]+)"', read("build.sbt")).group(1) == __version__


def test_the_supported_versions_are_the_build_s():
    """compatibility.md's table of supported versions and the ranges it quotes are those of
    constraints.txt, pyproject.toml and build.sbt."""
    page = read("docs/compatibility.md")
    rows = {row.split("|")[1].strip(): row.split("|")[2] for row in page.splitlines()
            if row.startswith("| ") and row.count("|") >= 4}
    expected = {
        "Python": [f"{PYTHON} or newer"],
        "Apache Spark (pyspark)": [f"{minor(SPARK)}.x", f"tested: {SPARK}"],
        "Delta Lake (delta-spark)": [f"{minor(DELTA)}.x", f"tested: {DELTA}",
                                     f"{jars.DELTA_VERSION} on the JVM side"],
        "sqlglot": [f"{minor(SQLGLOT)}.x", f"tested: {SQLGLOT}"],
        "Java": [JAVA],
        "Scala": [SCALA],
        "dbt-core, dbt-spark": [DBT],
        "Kafka": [f"kafka-clients {KAFKA_CLIENTS}", f"Kafka {minor(KAFKA_BROKER)}"],
    }
    for component, parts in expected.items():
        assert component in rows, f"compatibility.md has no row {component!r}"
        for part in parts:
            assert part in rows[component], f"{component}: {rows[component]!r} lacks {part!r}"
    for package in ("pyspark", "delta-spark", "sqlglot"):
        assert f"`{dependency(package)}`" in flat(page), f"{package}: {dependency(package)}"
    dbt = flat(read("docs/doors/dbt.md"))
    assert f"`{dependency('dbt-core')}`" in dbt and f"`{dependency('dbt-spark')}`" in dbt
    readme = flat(read("README.md"))
    assert f"Spark {minor(SPARK)} and Delta {minor(DELTA)} (tested: {SPARK} and {DELTA})" in readme


# -- settings and their defaults ---------------------------------------------------------------

def _scala_constant(relative: str, constant: str) -> str:
    return re.search(rf'{constant}\s*=\s*"([^"]+)"', read(relative)).group(1)


REWRITER = "jvm/src/main/scala/io/sqlext/rewriter/SqlRewriterRegistry.scala"


def code_defaults(monkeypatch, tmp_path) -> dict[str, list[str]]:
    """What the code makes of each setting left unset, as the settings page writes it: the
    paths under the project folder, the working directory or the home folder, the values."""
    for variable in ("SQL_EXT_WAREHOUSE", "SQL_EXT_JAR_CACHE", "XDG_CACHE_HOME",
                     "SQL_EXT_METASTORE"):
        monkeypatch.delenv(variable, raising=False)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    checkout = (f"`<project>/{jars.default_warehouse().relative_to(jars.PROJECT_DIR)}`",
                f"`<project>/{jars.cache_dir().relative_to(jars.PROJECT_DIR).as_posix()}`")
    monkeypatch.setattr(jars, "in_checkout", lambda: False)
    installed = (f"`./{jars.default_warehouse().relative_to(work)}`",
                 f"`~/{jars.cache_dir().relative_to(home).as_posix()}`")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jars.cache_dir().is_relative_to(tmp_path / "xdg")
    derby = catalog_conf(work / "wh")["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert derby.startswith("jdbc:derby:") and str(work / "wh") in derby
    profiles = read("examples/dbt/profiles.yml")
    return {
        "SQL_EXT_WAREHOUSE": [checkout[0] + " in a checkout", installed[0] + " when installed"],
        "SQL_EXT_JAR_CACHE": [checkout[1] + " in a checkout", installed[1], "`$XDG_CACHE_HOME`"],
        "SQL_EXT_METASTORE": ["embedded Derby catalog in the warehouse"],
        "spark.sql_ext.rewriter.timeout": [f"`{_scala_constant(REWRITER, 'DefaultTimeout')}`"],
        "SQL_EXT_THRIFT_PORT": [
            "`" + re.search(r"env_var\('SQL_EXT_THRIFT_PORT', '(\d+)'\)", profiles).group(1) + "`"],
        "SQL_EXT_TEST_WORKERS": [
            "default " + re.search(r"SQL_EXT_TEST_WORKERS:-(\d+)", read("python/dev.sh")).group(1)],
        "SQL_EXT_SOAK_RUNS": ["default " + re.search(
            r'"SQL_EXT_SOAK_RUNS", "(\d+)"', read("tests/test_thrift_load.py")).group(1)],
        "SQL_EXT_CHROMIUM": [f"default `{chromium()}`"],
    }


def chromium() -> str:
    """The browser of the site's check when SQL_EXT_CHROMIUM is unset: the test's, which is the
    one dev.sh installs."""
    used = re.search(r'get\("SQL_EXT_CHROMIUM"\) or "([^"]+)"', read("tests/site_browser.py"))
    installed = re.search(r"SQL_EXT_CHROMIUM:-([^}]+)\}", read("python/dev.sh"))
    assert used.group(1) == installed.group(1)
    return used.group(1)


# Defaults that say nothing is set: nothing in the code to compare them with.
NO_DEFAULT = {"none", "unset", ""}


def settings_rows() -> dict[str, str]:
    """Each setting of docs/reference/settings.md and the default its row gives: the table's
    `default` column, or a `(default ...)` in its description."""
    found, header = {}, None
    for line in read("docs/reference/settings.md").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("- "):
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        if "default" in header:
            default = cells[header.index("default")]
        else:
            given = re.search(r"\((default [^)]*)\)", line)
            default = given.group(1) if given else ""
        for setting in names:
            found[setting] = default
    return found


def test_the_settings_page_gives_the_code_s_defaults(monkeypatch, tmp_path):
    """Each default on the settings page is what the code does when the setting is left unset
    (not only the names, which tests/test_docs.py checks), and a new default on the page comes
    with its check here."""
    expected = code_defaults(monkeypatch, tmp_path)
    rows = settings_rows()
    unchecked = sorted(s for s, default in rows.items()
                       if default.strip("`").lower() not in NO_DEFAULT and s not in expected)
    assert not unchecked, f"add how the code defines the default of {unchecked} to this test"
    for setting, parts in expected.items():
        assert setting in rows, f"{setting} is not on the settings page any more"
        for part in parts:
            assert part in rows[setting], f"{setting}: the page says {rows[setting]!r}, " \
                                          f"the code {part!r}"


def test_the_spark_defaults_table_is_the_session_s():
    """The settings page's table of Spark settings sql-ext starts with is session.py's
    SPARK_DEFAULTS, each setting and value (a value with `|` is HTML: <code>, &#124;)."""
    from sql_ext.session import SPARK_DEFAULTS

    page = read("docs/reference/settings.md").split("sql-ext's sessions and servers start", 1)[1]
    rows = re.findall(r"^\| `([a-z][\w.]+)` \| (?:`(.+?)`|<code>(.+?)</code>) \|",
                      page.split("\n## ", 1)[0], re.M)
    assert {key: (code or html).replace("&#124;", "|") for key, code, html in rows} \
        == SPARK_DEFAULTS


def test_other_pages_repeat_the_same_defaults(monkeypatch, tmp_path):
    """The pages that repeat a default give the settings page's: deploying.md's table of where
    files go, the JDBC page's rewriter timeout, the dbt page's Thrift port."""
    expected = code_defaults(monkeypatch, tmp_path)
    deploying = read("docs/deploying.md")
    warehouse = next(r for r in deploying.splitlines() if r.startswith("| warehouse of"))
    cache = next(r for r in deploying.splitlines() if r.startswith("| Delta's jars"))
    for part in expected["SQL_EXT_WAREHOUSE"]:
        assert part.split(" ")[0] in warehouse, (part, warehouse)
    for part in expected["SQL_EXT_JAR_CACHE"]:
        assert part.split(" ")[0] in cache, (part, cache)
    timeout = expected["spark.sql_ext.rewriter.timeout"][0]
    assert f"`spark.sql_ext.rewriter.timeout` (default {timeout}" in flat(read(
        "docs/doors/thrift.md"))
    port = expected["SQL_EXT_THRIFT_PORT"][0].strip("`")
    assert f"port from SQL_EXT_THRIFT_PORT, default {port}" in read("docs/doors/dbt.md")


def test_the_settings_users_may_set_are_the_allow_list():
    """security.md's list of settings a user who is not an admin may SET is the JVM's
    AllowedSettings, in its order."""
    scala = read("jvm/src/main/scala/io/sqlext/access/AccessChecks.scala")
    code = re.sub(r"//[^\n]*", "", scala)  # a comment may hold a parenthesis
    body = re.search(r"object AllowedSettings \{.*?Seq\((.*?)\)", code, re.S).group(1)
    allowed = re.findall(r'"([^"]+)"', body)
    page = flat(read("docs/security.md"))
    listed = re.search(r"The settings a user may `SET`: (.*?)\.(?: |$)", page).group(1)
    assert [s for s in re.findall(r"`([^`]+)`", listed) if s.startswith("spark.")] == allowed


# -- commands and flags ------------------------------------------------------------------------

def _commands() -> tuple[dict[str, set[str]], set[str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {command: {o for a in p._actions for o in a.option_strings}
             for command, p in sub.choices.items()}
    # Commands that pass the rest of their line to another program (spark-pipelines, dbt).
    passing = {command for command, p in sub.choices.items()
               if any(a.nargs == argparse.REMAINDER for a in p._actions)}
    return flags, passing


def test_the_flags_the_pages_give_sql_ext_exist():
    """Every `sql-ext <command> ... --flag` on a page (up to the end of its line or code span)
    is a flag of that command, or of `sql-ext` itself; a command that hands the rest of its
    line on (pipelines, dbt) is checked up to its first word that is not its own."""
    flags, passing = _commands()
    top = {o for a in build_parser()._actions for o in a.option_strings}
    wrong, checked = [], 0
    for page in PAGES:
        for match in re.finditer(r"sql-ext (?:--verbose )?([a-z][a-z-]*)((?:[^\n`]|\\\n)*)",
                                 page.read_text()):
            command, rest = match.group(1), match.group(2)
            if command not in flags:
                continue
            rest = rest.split(" -- ")[0].split("#")[0]
            if command in passing:
                rest = re.split(r"\s(?!--)[a-z]", " " + rest.strip(), maxsplit=1)[0]
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest):
                checked += 1
                if flag not in flags[command] | top:
                    wrong.append(f"{name(page)}: sql-ext {command} {flag}")
    assert checked > 30
    assert not wrong, wrong


def test_the_dev_commands_the_design_page_lists_are_dev_sh_s():
    """internals.md's list of `dev.sh` commands is dev.sh's usage line."""
    usage = re.search(r"usage: bash python/dev.sh ([a-z|-]+)", read("python/dev.sh")).group(1)
    listed = re.search(r"dev.sh \(([^)]*)\)", flat(read("docs/design/internals.md"))).group(1)
    assert [c.strip() for c in listed.split(",")] == usage.split("|")


def test_the_servers_start_lines_are_quoted_as_printed():
    """The line a script waits for, a server's last line at start, is quoted whole and as
    sql_ext/cli.py prints it: every `(Ctrl-C to stop)` on a page ends a whole Thrift or Connect
    start line, and every `Thrift server on` that is not prose starts one."""
    source = read("sql_ext/cli.py")
    assert 'print(f"sql-ext Thrift server on jdbc:hive2://{args.host}:{args.port}/default"' \
        in source and '(Ctrl-C to stop)", flush=True)' in source
    assert 'print(f"sql-ext Spark Connect server on {address}{shown} (Ctrl-C to stop)"' in source
    whole = re.compile(r"sql-ext\s+(?:Thrift\s+server\s+on\s+jdbc:hive2://\S+:\S+/default"
                       r"(?:;ssl=true)?|Spark\s+Connect\s+server\s+on\s+sc://\S+)\s+"
                       r"\(Ctrl-C\s+to\s+stop\)")
    lines, wrong = 0, []
    for page in PAGES:
        text = page.read_text()
        spans = [m.span() for m in whole.finditer(text)]
        lines += len(spans)
        for m in re.finditer(r"\(Ctrl-C\s+to\s+stop\)", text):
            if not any(end == m.end() for _, end in spans):
                wrong.append(f"{name(page)}: {text[max(m.start() - 80, 0):m.end()]!r}")
        for m in re.finditer(r"Thrift\s+server\s+on\b(?!\s+(?:an?|the)\s)", text):
            if not any(begin <= m.start() < end for begin, end in spans):
                wrong.append(f"{name(page)}: {text[m.start():m.start() + 80]!r}")
    assert lines >= 2 and not wrong, wrong


# -- figures quoted from another page ----------------------------------------------------------

# (page, figure, page of the measurement): a figure one page quotes from another's measurement,
# written as the source writes it.
QUOTED = [
    ("README.md", "1,271 s", "docs/testing.md"),
    ("README.md", "1,340 s", "docs/testing.md"),
    ("README.md", "47 minutes", "docs/testing.md"),
    ("README.md", "about two hours", "docs/testing.md"),
    ("docs/doors/thrift.md", "213 to 466 s", "docs/shared-server.md"),
    ("docs/doors/thrift.md", "428-578 s", "docs/testing.md"),
    ("docs/shared-server.md", "104.7 s", "docs/doors/thrift.md"),
    ("docs/testing.md", "104.7 s", "docs/doors/thrift.md"),
    ("docs/testing.md", "37 processes", "docs/benchmarks.md"),
    ("docs/design/internals.md", "37 for a row", "docs/benchmarks.md"),
    ("docs/compatibility.md", "all 40 cells", "docs/benchmarks.md"),
    ("docs/compatibility.md", "0.87 to 1.05", "docs/benchmarks.md"),
    ("docs/compatibility.md", "0.86 to 1.19 in the second run", "docs/benchmarks.md"),
    ("docs/compatibility.md", "0.86 to 3.13", "docs/benchmarks.md"),
]
# Sections that only quote another page: every figure in them is the source's.
QUOTING_SECTIONS = [("docs/compatibility.md", "## Performance against Spark's own windows",
                     "docs/benchmarks.md")]
FIGURE = re.compile(r"(?<![\w.,-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{2,})(?![\w.]*\d)")


def test_figures_quoted_from_another_page_are_the_measurement_s():
    """A figure that one page quotes from a measurement on another is written on both alike:
    a new measurement changes the source, and this test finds the copies."""
    for page, figure, source in QUOTED:
        for where in (page, source):
            text = flat(read(where)).replace("**", "")
            if where == source and figure == "37 for a row":
                figure = "37 processes"  # the benchmark counts the same processes
            assert figure in text, f"{where} does not say {figure!r} ({page} quotes {source})"


def test_a_section_that_quotes_the_benchmarks_has_their_figures_only():
    """compatibility.md's summary of the benchmarks: each figure in it (a decimal, a thousands
    figure, a number of two digits or more) is one docs/benchmarks.md gives."""
    for page, heading, source in QUOTING_SECTIONS:
        section = read(page).split(heading, 1)[1].split("\n## ", 1)[0]
        known = set(FIGURE.findall(read(source)))
        figures = FIGURE.findall(re.sub(r"\]\([^)]*\)", "]", section))
        assert len(figures) >= 10, f"{page}: {heading} quotes no figures any more"
        missing = sorted(set(figures) - known)
        assert not missing, f"{page}, {heading}: not in {source}: {missing}"
        # A range is one measurement's (or one column's): the source gives it as a range too.
        ranges = re.findall(r"\d[\d.,]* to \d[\d.,]*\d", flat(section))
        apart = [r for r in ranges if r not in flat(read(source))]
        assert not apart, f"{page}, {heading}: ranges {source} does not give: {apart}"


def test_a_figure_changed_on_one_side_is_found():
    """The quoting check is a check: a source that moved on leaves its copy behind."""
    section = read("docs/compatibility.md").split(QUOTING_SECTIONS[0][1], 1)[1]
    known = set(FIGURE.findall(read("docs/benchmarks.md").replace("1,116", "1,117")))
    assert "1,116" in FIGURE.findall(section) and "1,116" not in known


@pytest.mark.parametrize("version", [__version__])
def test_the_wheel_the_pages_name_is_this_version_s(version):
    """Pages that name the wheel's file name it with sql_ext/version.py's version."""
    named = [m for page in PAGES for m in re.findall(r"sql_ext-([\d.]+)-py3", page.read_text())]
    assert named and set(named) == {version}
