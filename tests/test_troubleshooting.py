"""The messages the docs quote are the messages the code gives.

docs/troubleshooting.md quotes what users see, one message a line in its ```text blocks, with
`{...}` for the parts that vary. Each must still come from the source that produces it:
sql-ext's own (sql_ext/, the extension's Scala, error-conditions.json), or, for the messages of
Spark, Hive and Delta, their jars (class files and error-condition files). A message is
checked piece by piece: the text between its `{...}` parts, its `[CONDITION]`s (each a
condition of sql-ext, Spark or Delta) and, after a sql-ext condition, its SQLSTATE.

The reference pages show errors as a statement line followed by the first line of its error
(`[SQL_EXT_...] ... (line 1, pos 40)`); those statements are run, and must fail with exactly
that line.
"""

from __future__ import annotations

import functools
import json
import re
import zipfile
from pathlib import Path

import pyspark
import pytest

from sql_ext import jars
from sql_ext.sql.errors import CONDITIONS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "troubleshooting.md"
REFERENCE = sorted((ROOT / "docs" / "reference").glob("*.md"))
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
CONDITION = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)?)\]")
# Where a message is cut into pieces: its varying parts and its conditions.
CUTS = re.compile(r"\{[^{}]*\}|\[[A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)?\]")
# Spark's rendering of a condition's SQLSTATE (and, for a statement, where in it).
SQLSTATE = re.compile(r"\s*SQLSTATE: ([0-9A-Z]{5})\.?(\s*\(line \d+, pos \d+\))?\s*$")
# The jars whose messages the page may quote: Spark SQL's, its Thrift server's (HiveServer2's
# sign-in), Spark Connect's, Spark's error conditions, Delta's.
THIRD_PARTY_JARS = ("spark-sql_*.jar", "spark-hive-thriftserver_*.jar", "spark-connect_*.jar",
                    "spark-common-utils_*.jar")
# A piece this short ("at '", ": ") says nothing on its own; the long ones around it do.
SHORTEST_PIECE = 4


def messages(page: Path = PAGE) -> list[str]:
    """The quoted messages: every line of the page's ```text blocks."""
    return [line.strip() for m in FENCE.finditer(page.read_text()) if m.group(1) == "text"
            for line in m.group(2).splitlines() if line.strip()]


def _joined(text: str) -> str:
    """Source text with adjacent string literals joined, as the compiler joins them: Python's
    implicit concatenation, Scala's `"..." +` and interpolators (s, f), across lines; then its
    escaped quotes as the message shows them."""
    text = re.sub(r"[\"']\s*\+?\s*\n?\s*(?:[rRfFbBuUs]{0,2})[\"']", "", text)
    return text.replace('\\"', '"').replace("\\'", "'")


@functools.lru_cache(maxsize=1)
def own_source() -> str:
    """sql-ext's own text: the Python package, the extension's Scala, the conditions file."""
    files = [*sorted((ROOT / "sql_ext").rglob("*.py")),
             *sorted((ROOT / "jvm" / "src" / "main").rglob("*.scala")),
             ROOT / "sql_ext" / "sql" / "error-conditions.json"]
    return "\n".join(_joined(f.read_text()) for f in files)


def _strings(value) -> list[str]:
    """Every string of a parsed JSON document (an error-condition file's messages)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@functools.lru_cache(maxsize=1)
def third_party() -> tuple[str, dict]:
    """The text of Spark's and Delta's jars (the string constants of their classes, their
    error-condition files' messages), and their conditions by name (with subclasses as
    `A.B`)."""
    spark_jars = Path(pyspark.__file__).parent / "jars"
    paths = [p for pattern in THIRD_PARTY_JARS for p in sorted(spark_jars.glob(pattern))]
    paths += [p for p in jars.delta_jars() if p.name.startswith("delta-spark")]
    assert len(paths) >= len(THIRD_PARTY_JARS) + 1, paths
    texts, conditions = [], {}
    for path in paths:
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name.endswith(".class"):
                    # Class files keep string constants as (modified) UTF-8; messages are ASCII.
                    texts.append(archive.read(name).decode("latin-1"))
                elif name.startswith("error/") and name.endswith(".json"):
                    found = json.loads(archive.read(name))
                    texts.extend(_strings(found))
                    for condition, info in found.items():
                        if not isinstance(info, dict):  # error/error-classes.json: names only
                            continue
                        conditions[condition] = info
                        for sub, detail in (info.get("subClass") or {}).items():
                            conditions[f"{condition}.{sub}"] = detail
                            # Spark shows a subclass's message after its condition's.
                            texts.append(" ".join(info.get("message", []) +
                                                  detail.get("message", [])))
    return "\n".join(texts), conditions


def problems(message: str) -> list[str]:
    """What of `message` no source gives: pieces not found, unknown conditions, a SQLSTATE
    that is not its condition's. Empty when the message is the code's."""
    found = []
    text = message
    state = SQLSTATE.search(text)
    if state:
        text = text[:state.start()]
    leading = CONDITION.match(text)
    if state and leading and leading.group(1) in CONDITIONS \
            and CONDITIONS[leading.group(1)]["sqlState"] != state.group(1):
        found.append(f"SQLSTATE {state.group(1)} is not {leading.group(1)}'s "
                     f"({CONDITIONS[leading.group(1)]['sqlState']})")
    for condition in CONDITION.findall(text):
        if condition not in CONDITIONS and condition not in third_party()[1]:
            found.append(f"no condition [{condition}]")
    pieces = [p.strip() for p in CUTS.split(text) if p.strip()]
    for piece in pieces:
        if len(piece) < SHORTEST_PIECE or piece in own_source():
            continue
        if piece not in third_party()[0]:
            found.append(f"not in the source: {piece!r}")
    return found


def test_every_message_the_troubleshooting_page_quotes_is_the_code_s():
    quoted = messages()
    assert len(quoted) >= 25, quoted  # the page quotes messages for each of its symptoms
    wrong = {message: found for message in quoted if (found := problems(message))}
    assert not wrong, "docs/troubleshooting.md quotes what no source says:\n" + "\n".join(
        f"{message}\n    {'; '.join(found)}" for message, found in wrong.items())


def test_a_message_the_code_does_not_give_is_found_out():
    """The check can fail: a word changed, a condition or SQLSTATE that is not the code's."""
    right = ("[SQL_EXT_STREAMING_TABLE] STOP STREAM {name}: no streaming table of that name is "
             "running SQLSTATE: 55000")
    assert problems(right) == []
    assert problems(right.replace("is running", "is started")) \
        == ["not in the source: ': no streaming table of that name is started'"]
    assert problems(right.replace("55000", "42000")) \
        == ["SQLSTATE 42000 is not SQL_EXT_STREAMING_TABLE's (55000)"]
    # (The name made up in two parts: the settings page's test takes every SQL_EXT_ name.)
    made_up = "SQL_EXT_" + "NO_SUCH"
    assert problems(right.replace("SQL_EXT_STREAMING_TABLE", made_up)) \
        == [f"no condition [{made_up}]"]
    # A message of Spark's, from its jars, and one it does not have.
    assert problems("Current batch is falling behind. The trigger interval is {interval} "
                    "milliseconds, but spent {time} milliseconds") == []
    assert problems("Current batch is falling far behind.") \
        == ["not in the source: 'Current batch is falling far behind.'"]


def error_examples(page: Path) -> list[tuple[str, str]]:
    """(statement, first line of its error) of a reference page's ```text blocks: a statement
    line right before a line that opens with a condition of sql-ext."""
    found = []
    for m in FENCE.finditer(page.read_text()):
        lines = m.group(2).splitlines() if m.group(1) == "text" else []
        for before, line in zip(lines, lines[1:]):
            if line.startswith("[SQL_EXT_") and re.match(r"(?i)(SELECT|CREATE|WITH)\b", before):
                found.append((before, line))
    return found


def test_the_reference_pages_show_the_errors_their_statements_give(spark):
    """Each statement runs in a session of its own, after the page's temporary views (so an
    error that a view's columns would change is the one a reader gets)."""
    session = spark.newSession()
    checked = 0
    for page in REFERENCE:
        examples = error_examples(page)
        if not examples:
            continue
        for m in FENCE.finditer(page.read_text()):
            if m.group(1) == "sql" and m.group(2).lstrip().upper().startswith(
                    "CREATE OR REPLACE TEMP VIEW"):
                session.sql(m.group(2).strip())
        for statement, shown in examples:
            with pytest.raises(Exception) as error:
                session.sql(statement).collect()
            got = next(line for line in str(error.value).splitlines() if line.strip())
            assert got == shown, f"{page.name}: {statement}\n shown: {shown}\n   got: {got}"
            checked += 1
    assert checked >= 8, checked
