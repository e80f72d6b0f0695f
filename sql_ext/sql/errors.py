"""The one error type of the windowed SQL surface: a message plus where it is in the text."""

from __future__ import annotations


class WindowSqlError(ValueError):
    """Invalid windowed SQL. `line` is 1-based, `column` 1-based (0 when unknown)."""

    def __init__(self, message: str, line: int = 1, column: int = 0):
        self.message = message
        self.line = line
        self.column = column
        where = f" (line {line}, column {column})" if column else ""
        super().__init__(f"{message}{where}")


def error_at(token, message: str) -> WindowSqlError:
    """An error positioned at the first character of a sqlglot token."""
    if token is None:
        return WindowSqlError(message)
    return WindowSqlError(message, token.line, max(1, token.col - len(token.text) + 1))


def error_at_node(node, message: str) -> WindowSqlError:
    """An error positioned where the parser saw `node` (see dialect.mark_position)."""
    meta = getattr(node, "meta", None) or {}
    return WindowSqlError(message, meta.get("sx_line", 1), meta.get("sx_column", 0))
