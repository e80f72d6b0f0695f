""""Did you mean": the windowed grammar's words, and the misspellings that stand where they
should.

A misspelt window kind (`WINDOW TUMBLNG COUNT(3)`) is not the extension's clause to Spark's
parser, which then reports only "Syntax error at or near 'WINDOW'". The text is checked here,
at the token level, before either parser sees it: a word that stands where a window keyword
must (after WINDOW, before a window kind, a pane function's call with no arguments in a
windowed query) and is one or two edits from it gets sql-ext's error, naming the word and
where it is. Inside the clause the parser asks `nearest` for the word it expected.

A word far from every keyword (`WINDOW w AS (...)`, a named window) is not a misspelling: the
text goes on to Spark's own parser unchanged.
"""

from __future__ import annotations

from sqlglot.tokens import TokenType

from sql_ext.sql import contract
from sql_ext.sql.errors import WindowSqlError
# A misspelling is a syntax error (SQL_EXT_WINDOW_SYNTAX).
from sql_ext.sql.errors import syntax_error_at as error_at

WINDOW_KINDS = ("TUMBLING", "SLIDING", "TIME_INTERVAL")
PANE_FUNCTIONS = tuple(name.upper() for name in contract.PANE_FUNCTION_COLUMNS)


def edits(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of two neighbours that make `a` into
    `b` (the optimal string alignment distance), case-insensitive."""
    a, b = a.upper(), b.upper()
    previous2, previous = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1,
                             previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def nearest(word: str, choices) -> str | None:
    """The choice `word` misspells: one edit away (two for words of six letters or more), the
    closest, not `word` itself; None when there is none."""
    allowed = 2 if len(word) >= 6 else 1
    scored = sorted((edits(word, choice), choice) for choice in choices
                    if choice.upper() != word.upper())
    if scored and 0 < scored[0][0] <= allowed:
        return scored[0][1]
    return None


def did_you_mean(token, choices) -> str:
    """": did you mean X?" when the token's word misspells one of `choices`, else "" (also
    for no token: the statement ended)."""
    near = nearest(token.text, choices) if token is not None else None
    return f": did you mean {near}?" if near else ""


def misspelt_window(tokens: list) -> WindowSqlError | None:
    """The error for the first misspelt window word of a statement's tokens, or None."""
    windowed = False
    for i, token in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        word = token.text.upper()
        if token.token_type == TokenType.WINDOW and after is not None \
                and after.text.upper() not in WINDOW_KINDS:
            then = tokens[i + 2] if i + 2 < len(tokens) else None
            near = nearest(after.text, WINDOW_KINDS)
            if near and (then is None or then.token_type != TokenType.ALIAS):
                return error_at(after, f"{after.text} is not a window kind (TUMBLING, SLIDING "
                                       f"or TIME_INTERVAL): did you mean {near}?")
        if word in WINDOW_KINDS:
            windowed = windowed or (i > 0 and tokens[i - 1].token_type == TokenType.WINDOW)
            before = tokens[i - 1] if i > 0 else None
            if before is not None and before.token_type != TokenType.WINDOW \
                    and nearest(before.text, ("WINDOW",)):
                return error_at(before, f"{before.text} {token.text}: did you mean WINDOW "
                                        f"{token.text}?")
    if not windowed:
        return None
    for i, token in enumerate(tokens[:-2]):
        # A pane function takes no arguments: NAME ( ) with NAME one or two edits away.
        if tokens[i + 1].token_type == TokenType.L_PAREN \
                and tokens[i + 2].token_type == TokenType.R_PAREN \
                and token.text.upper() not in PANE_FUNCTIONS:
            near = nearest(token.text, PANE_FUNCTIONS)
            if near:
                return error_at(token, f"{token.text}() is not a pane function: did you mean "
                                       f"{near}()?")
    return None
