"""The documentation site: `mkdocs build --strict` passes (no broken link, no page outside the
navigation), every SQL example of the reference pages runs, in order, with the output its
page shows, and the command-line page is what the command's parser says.

A page's ```sql blocks run one after another in the test's session (one statement each); a
```text block right after one is the output of that statement, as `DataFrame.show()` prints it
(no truncation). SQL_EXT_DOCS_RECORD=1 prints what each example gives instead of comparing, to
write a new page, and writes docs/reference/cli.md anew."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sql_ext.cli import build_parser
from sql_ext.sql.errors import CONDITIONS

ROOT = Path(__file__).resolve().parents[1]
# The reference pages with SQL (the command-line and settings pages have none).
REFERENCE = sorted(p for p in (ROOT / "docs" / "reference").glob("*.md")
                   if "```sql" in p.read_text())
# Material's notice about MkDocs 2 on every build: nothing to act on here.
QUIET = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def examples(page: Path) -> list[tuple[str, str | None]]:
    """(statement, expected output or None) of each ```sql block, in page order."""
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(page.read_text())]
    found = []
    for i, (language, body) in enumerate(blocks):
        if language != "sql":
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = following[1] if following and following[0] == "text" else None
        found.append((body.strip().rstrip(";"), expected))
    return found


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          env=QUIET)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "windows" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path):
    """The strict build is a check: a page with a link to nothing fails it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[nowhere](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nnav:\n  - Home: index.md\n")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path,
                          capture_output=True, text=True, env=QUIET)
    assert done.returncode != 0 and "missing.md" in done.stderr


@pytest.mark.parametrize("page", REFERENCE, ids=lambda p: p.name)
def test_reference_examples_run_with_the_output_shown(spark, page):
    found = examples(page)
    assert found, f"{page.name} has no SQL example"
    for statement, expected in found:
        frame = spark.sql(statement)
        if expected is None:
            continue
        got = frame._show_string(100, False)
        if os.environ.get("SQL_EXT_DOCS_RECORD"):
            print(f"\n{page.name}:\n{statement}\n```text\n{got}```")
            continue
        assert got == expected, f"{page.name}: {statement}\n--- shown ---\n{expected}" \
                                f"--- got ---\n{got}"


def cli_page() -> str:
    """docs/reference/cli.md from `sql-ext`'s parser: every command, every flag, its help."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in commands._choices_actions}
    lines = ["# The sql-ext command", "",
             "`sql-ext` is installed with the package (`.venv/bin/sql-ext` in a checkout). "
             "`sql-ext --version` prints the version; `sql-ext <command> --help` prints a "
             "command's flags; `sql-ext --verbose <command>` keeps the warnings of Spark and "
             "Hive that sql-ext leaves out by default.", ""]
    for name, command in commands.choices.items():
        lines += [f"## `sql-ext {name}`", "", helps[name][:1].upper() + helps[name][1:] + ".", ""]
        rows = []
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flag = ", ".join(action.option_strings) or action.metavar or action.dest
            if action.option_strings and action.nargs != 0:
                flag += f" {action.metavar or action.dest.upper()}"
            text = (action.help or "").replace("|", "\\|").replace("\n", " ")
            rows.append(f"| `{flag}` | {text} |")
        if rows:
            lines += ["| flag | meaning |", "| --- | --- |", *rows, ""]
    return "\n".join(lines)


ERRORS_INTRO = """# Errors

sql-ext's errors are Spark's exception types with conditions of sql-ext's own, named
`SQL_EXT_*`, each with a SQLSTATE, as Spark 4 makes its own errors: PySpark's
`getCondition()` and `getSqlState()` return them, and a JDBC client reads the SQLSTATE of the
failed statement (`SQLException.getSQLState()`, PyHive's `status.sqlState`). The message reads
`[CONDITION] <what is wrong> SQLSTATE: <state>`, and an error in the text of a statement says
where, as Spark does: line 1-based, `pos` 0-based, with the statement and a pointer at the place:

```text
[SQL_EXT_INVALID_WINDOW] COUNT(0): the count must be at least 1 SQLSTATE: 42000 (line 1, pos 50)

== SQL ==
SELECT SUM(v) FROM readings WINDOW TUMBLING COUNT(0)
--------------------------------------------------^^^
```

A misspelt window keyword, policy, clause word or pane function (`WINDOW TUMBLNG COUNT(3)`)
gets `SQL_EXT_WINDOW_SYNTAX` with the nearest valid word ("did you mean TUMBLING?"). Text that
is not a window clause at all keeps Spark's own error, unchanged. Analysis errors of a windowed
statement (an unknown column or table, a missing aggregation) keep Spark's condition
(`UNRESOLVED_COLUMN`, `TABLE_OR_VIEW_NOT_FOUND`, `MISSING_AGGREGATION`, ...) but speak of the
statement as written: no helper columns among the suggestions, no internal plan, the pointer
at the name in your text; a parameter without a value is Spark's `UNBOUND_SQL_PARAMETER`.

Rows whose DELTA value, TIME_INTERVAL event time or replayed clock (the ORDER BY value of a batch
TIME policy or PARTITION EVICTION AGE) is NULL are not an error: they are not windowed, and are
counted (`sql_ext.not_windowed_rows`, SHOW STREAMS' `not_windowed`) and logged.

The conditions below are defined in one file, `sql_ext/sql/error-conditions.json`, which the
Python package and the extension's jar both read.
"""


def errors_page() -> str:
    """docs/reference/errors.md from error-conditions.json: each condition, its SQLSTATE, what
    it means and what to do."""
    lines = [ERRORS_INTRO, "| condition | SQLSTATE |", "| --- | --- |"]
    lines += [f"| [`{name}`](#{name.lower()}) | `{info['sqlState']}` |"
              for name, info in CONDITIONS.items()]
    for name, info in CONDITIONS.items():
        lines += ["", f"## {name}", "", f"SQLSTATE `{info['sqlState']}`. {info['meaning']}", "",
                  f"**What to do.** {info['fix']}"]
    return "\n".join(lines) + "\n"


def test_the_errors_page_lists_every_condition():
    page = ROOT / "docs" / "reference" / "errors.md"
    if os.environ.get("SQL_EXT_DOCS_RECORD"):
        page.write_text(errors_page())
    assert page.read_text() == errors_page(), "docs/reference/errors.md is not " \
        "error-conditions.json's: SQL_EXT_DOCS_RECORD=1 bash python/dev.sh pytest " \
        "tests/test_docs.py writes it"


def test_the_cli_page_is_the_parser_s():
    page = ROOT / "docs" / "reference" / "cli.md"
    if os.environ.get("SQL_EXT_DOCS_RECORD"):
        page.write_text(cli_page())
    assert page.read_text() == cli_page(), "docs/reference/cli.md is not the parser's: " \
        "SQL_EXT_DOCS_RECORD=1 bash python/dev.sh pytest tests/test_docs.py writes it"


# Names that look like settings but are SQL functions of the extension.
FUNCTION_NAMES = {"SQL_EXT_WINDOW", "SQL_EXT_ARRIVAL", "SQL_EXT_ARRIVAL_FILE"}


def test_every_setting_and_environment_variable_is_on_the_settings_page():
    page = (ROOT / "docs" / "reference" / "settings.md").read_text()
    found = set()
    for folder, pattern in (("sql_ext", r"SQL_EXT_[A-Z_]+|spark\.sql_ext\.[a-z_.]*[a-z]"),
                            ("python", r"SQL_EXT_[A-Z_]+"), ("tests", r"SQL_EXT_[A-Z_]+"),
                            ("examples", r"SQL_EXT_[A-Z_]+"), ("build.sbt", r"SQL_EXT_[A-Z_]+"),
                            ("jvm/src/main", r"spark\.sql_ext\.[a-z_.]*[a-z]")):
        root = ROOT / folder
        for path in [root] if root.is_file() else root.rglob("*"):
            if path.is_file() and path.suffix in (".py", ".sh", ".scala", ".sbt", ".sql",
                                                  ".yml", ".md"):
                found |= set(re.findall(pattern, path.read_text(errors="replace")))
    documented = {n for n in found if f"`{n}`" in page}
    missing = sorted(found - FUNCTION_NAMES - set(CONDITIONS) - documented)
    assert not missing, f"not on docs/reference/settings.md: {missing}"


def quickstart() -> tuple[str, str]:
    """The README's quickstart: its Python block and the output shown after it."""
    section = (ROOT / "README.md").read_text().split("## Quickstart", 1)[1]
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(section)]
    code = next(body for language, body in blocks if language == "python")
    shown = next(body for language, body in blocks if language == "text")
    return code, shown


def test_the_readme_quickstart_runs_with_the_output_shown(spark, monkeypatch, capsys):
    """The code a stranger copies first, run as written in the test's session (its table
    renamed: another test's temporary view `readings` would shadow it), prints what the README
    shows; the site's home page shows the same code."""
    code, shown = quickstart()
    assert code in (ROOT / "docs" / "index.md").read_text()
    import sql_ext
    monkeypatch.setattr(sql_ext, "session", lambda *args, **kwargs: spark)
    capsys.readouterr()
    exec(compile(re.sub(r"\breadings\b", "quickstart_readings", code), "README.md", "exec"), {})
    assert capsys.readouterr().out.rstrip("\n") == shown.rstrip("\n")


def test_the_readme_links_lead_somewhere():
    """The README's links to files of the repository (docs pages, LICENSE) exist."""
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)\)", text)
    local = [t for t in targets if "://" not in t]
    assert len(local) > 10
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to nothing: {missing}"


# Every ```sql block of the site and the README is checked one of three ways: the reference
# pages' run with their output (above); a block that shows an example file (`--8<-- "path"`)
# is that file, which the named test runs; the other pages' blocks are walk-throughs, run
# statement by statement over a `traffic` table made first (below).
INCLUDED_EXAMPLES = {"examples/pipelines/": "tests/test_pipelines.py",
                     "examples/dbt/": "tests/test_dbt.py"}
WALKTHROUGHS = ["README.md", "docs/guide/streaming-tables.md", "docs/guide/late-rows.md",
                "docs/doors/kafka-topics.md"]
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$')


def sql_blocks(page: Path) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(page.read_text()) if m.group(1) == "sql"]


def test_every_sql_block_of_the_docs_is_checked():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    unchecked = []
    for page in pages:
        relative = page.relative_to(ROOT).as_posix()
        if page in REFERENCE or relative in WALKTHROUGHS:
            continue
        for block in sql_blocks(page):
            shown = SNIPPET.match(block.strip())
            runner = shown and next((test for folder, test in INCLUDED_EXAMPLES.items()
                                     if shown.group(1).startswith(folder)), None)
            if not runner or not (ROOT / shown.group(1)).is_file():
                unchecked.append(f"{relative}: {block.strip().splitlines()[0]}")
            else:  # the test that runs the example names its folder
                assert shown.group(1).split("/")[1] in (ROOT / runner).read_text()
    assert not unchecked, f"SQL examples no test runs: {unchecked}"
    for relative in WALKTHROUGHS:
        assert sql_blocks(ROOT / relative), f"{relative} has no SQL walk-through any more"


def statements(block: str) -> list[str]:
    """A block's statements, without their `--` comments: split at each `;` outside quotes
    and comments."""
    found, current, quote, comment = [], [], None, False
    for char in block:
        if comment:
            comment = char != "\n"
            if comment:
                continue
        elif quote:
            quote = None if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == "-" and current and current[-1] == "-":
            comment = True
            current.pop()
            continue
        elif char == ";":
            found.append("".join(current))
            current = []
            continue
        current.append(char)
    found.append("".join(current))
    return [" ".join(s.split()) for s in found if s.strip()]


@pytest.mark.parametrize("relative", WALKTHROUGHS)
def test_walkthrough_examples_run(spark, relative, tmp_path, request):
    """A guide's statements in page order, in a session of their own whose current database
    has `traffic` (freeway, lane_flow, event_time). `AS ...` stands for the query of the
    block's CREATE STREAMING TABLE; paths under /data go to a temporary folder; Kafka's
    `broker:9092` and topic `traffic` are the run's broker and a new topic. The streams the
    statements leave running are dropped at the end."""
    import uuid

    session = spark.newSession()
    database = f"docs_{uuid.uuid4().hex[:8]}"
    session.sql(f"CREATE DATABASE {database}")
    session.sql(f"USE {database}")
    session.sql("CREATE TABLE traffic USING DELTA AS SELECT * FROM VALUES "
                "('I-80', 120, TIMESTAMP'2024-01-01 08:00:00'), "
                "('I-80', 150, TIMESTAMP'2024-01-01 08:00:30'), "
                "('US-101', 90, TIMESTAMP'2024-01-01 08:00:10') "
                "AS t(freeway, lane_flow, event_time)")
    substitutions = [("'/data/", f"'{tmp_path.as_posix()}/")]
    if relative.endswith("kafka-topics.md"):
        from kafka_messages import create_topic, produce

        kafka = request.getfixturevalue("kafka")
        topic = f"docs_traffic_{uuid.uuid4().hex[:8]}"
        create_topic(kafka, topic, 1)
        produce(kafka, topic, [("I-80", {"freeway": "I-80", "lane_flow": 120,
                                         "event_time": "2024-01-01T08:00:00"})])
        substitutions += [("'broker:9092'", f"'{kafka}'"), ("'subscribe' = 'traffic'",
                                                          f"'subscribe' = '{topic}'")]
        # "Kafka in production" signs in on the same broker's SASL_SSL listener, its user and
        # passwords in a properties file, as the page shows.
        sasl = request.getfixturevalue("kafka_sasl")
        secrets = tmp_path / "kafka-client.properties"
        secrets.write_text(f"username={sasl['user']}\npassword={sasl['password']}\n"
                           f"truststore.password={sasl['truststore_password']}\n")
        substitutions += [("'kafka-1.example.com:9096'", f"'{sasl['listeners']['SASL_SSL']}'"),
                          ("/etc/sql-ext/kafka-truststore.p12", sasl["truststore"]),
                          ("/etc/sql-ext/kafka-client.properties", str(secrets))]
    ran = 0
    try:
        for block in sql_blocks(ROOT / relative):
            query = None
            for statement in statements(block):
                for old, new in substitutions:
                    statement = statement.replace(old, new)
                created = re.match(r"CREATE STREAMING TABLE \w+ .*?\bAS\s+(SELECT\b.*)",
                                   statement, re.S)
                query = created.group(1) if created else query
                if re.search(r"\bAS \.\.\.$", statement):
                    assert query, f"{relative}: `AS ...` before any query: {statement}"
                    statement = statement[:-3] + query
                session.sql(statement).collect()
                ran += 1
        assert ran >= 2
    finally:
        for row in session.sql("SHOW STREAMS").collect():
            if row.name.startswith(f"{database}."):
                session.sql(f"DROP STREAMING TABLE {row.name}")
        session.sql(f"DROP DATABASE {database} CASCADE")
