"""Table names as Spark reads them back, qualified or not, and string literals (paths) in the
SQL that sql-ext writes."""

from __future__ import annotations

import re

from sqlglot import exp

from sql_ext.sql.errors import WindowSyntaxError

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def table_name(name: str) -> str:
    """`db`.`t` -> db.t; parts that need quoting keep their backquotes (`my table` stays
    quoted, `a``b` escaped)."""
    try:
        table = exp.to_table(name, dialect="spark")
    except Exception as error:  # noqa: BLE001 - sqlglot's errors name no table
        raise WindowSyntaxError(f"`{name}` is not a table name: {error}") from None
    return ".".join(quote(part.name) for part in table.parts)


def quote(part: str) -> str:
    """One name part, backquoted when Spark needs it."""
    return part if _PLAIN_NAME.match(part) else "`" + part.replace("`", "``") + "`"


def table_key(name: str) -> str:
    """One key per table however its name is written (Spark's names are case-insensitive)."""
    return table_name(name).lower()


def string_literal(text: str) -> str:
    """A Spark SQL string literal of `text`: a path with quotes or backslashes stays one
    literal ('o sp\\'ace' for o sp'ace)."""
    return exp.Literal.string(text).sql(dialect="spark")
