"""sql-ext's own errors: a condition of error-conditions.json (the file the JVM extension reads
too, as Spark reads its error-conditions.json), a message, and where it is in the text.

Positions follow Spark's convention in every message: line 1-based, `pos` 0-based ("(line 1,
pos 51)"). The `column` attribute is 1-based, as editors count."""

from __future__ import annotations

import json
from pathlib import Path

CONDITIONS: dict[str, dict] = json.loads(
    Path(__file__).with_name("error-conditions.json").read_text())


def sql_state(condition: str) -> str:
    return CONDITIONS[condition]["sqlState"]


def render(condition: str, message: str) -> str:
    """The condition's message template with `message` in it, as Spark fills its own."""
    return " ".join(CONDITIONS[condition]["message"]).replace("<message>", message)


class WindowSqlError(ValueError):
    """sql-ext's error about a statement. `line` is 1-based, `column` 1-based (0 when
    unknown). Each subclass is one condition; this one is SQL_EXT_INVALID_WINDOW."""

    condition = "SQL_EXT_INVALID_WINDOW"

    def __init__(self, message: str, line: int = 1, column: int = 0):
        self.message = message
        self.line = line
        self.column = column
        where = f" (line {line}, pos {self.pos})" if column else ""
        super().__init__(f"[{self.condition}] {render(self.condition, message)}"
                         f" SQLSTATE: {self.sql_state}{where}")

    @property
    def sql_state(self) -> str:
        return sql_state(self.condition)

    @property
    def pos(self) -> int:
        """The 0-based position in its line, as Spark reports it."""
        return max(self.column - 1, 0)


class WindowSyntaxError(WindowSqlError):
    """A window clause or streaming-table statement that does not parse."""
    condition = "SQL_EXT_WINDOW_SYNTAX"


class UnsupportedWindowError(WindowSqlError):
    """A valid window that this place (a stream, a pipeline) cannot run."""
    condition = "SQL_EXT_UNSUPPORTED_WINDOW"


class StreamingTableError(WindowSqlError):
    """A streaming-table statement that the table's present state refuses."""
    condition = "SQL_EXT_STREAMING_TABLE"


class AccessDeniedError(WindowSqlError):
    """A streaming statement or a stream's micro-batch that the server's access rules refuse
    to its user (the JVM's io.sqlext.access.AccessChecks says why)."""
    condition = "SQL_EXT_ACCESS_DENIED"


class StreamInterruptedError(StreamingTableError):
    """A statement that runs a stream was cancelled or timed out."""
    condition = "SQL_EXT_STREAM_INTERRUPTED"


def error_at(token, message: str, kind: type[WindowSqlError] = WindowSqlError) -> WindowSqlError:
    """An error positioned at the first character of a sqlglot token."""
    if token is None:
        return kind(message)
    return kind(message, token.line, max(1, token.col - len(token.text) + 1))


def syntax_error_at(token, message: str) -> WindowSqlError:
    """error_at of a syntax error (SQL_EXT_WINDOW_SYNTAX): the parser's and the spelling's."""
    return error_at(token, message, WindowSyntaxError)


def error_at_node(node, message: str,
                  kind: type[WindowSqlError] = WindowSqlError) -> WindowSqlError:
    """An error positioned where the parser saw `node` (see dialect.mark_position)."""
    meta = getattr(node, "meta", None) or {}
    return kind(message, meta.get("sx_line", 1), meta.get("sx_column", 0))

