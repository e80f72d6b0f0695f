"""The sqlglot dialect that owns the windowed grammar of spec/sql.md: Spark SQL plus

    WINDOW TUMBLING <policy> | SLIDING <policy> TRIGGER <policy>
         | TIME_INTERVAL(<args>) ON <expr>
    [OVER (PARTITION BY ... ORDER BY ...)] [WATERMARK DELAY d [IDLE t] | WATERMARK BY expr]
    [LATE ROWS INTO <table>] [PARTITION EVICTION AGE(s) | COUNT(n) | TUPLES(n)]
    [EMIT INCOMPLETE] [EMIT EVICTED] [EMIT FINAL | EMIT EARLY EVERY d]

and the streaming statements of spec/sql.md section 5:

    CREATE [OR REPLACE] STREAMING TABLE <name> [PARTITIONED BY (<column>, ...)]
      [LOCATION '<path>'] [CHECKPOINT '<path>'] [TBLPROPERTIES ('<key>' = '<value>', ...)]
      [TRIGGER AVAILABLE NOW | TRIGGER EVERY <duration>] AS <windowed query over STREAM(...)>
    ALTER STREAMING TABLE <name> <the same clauses> AS <query>
    SHOW STREAMS
    STOP STREAM <name>
    REFRESH STREAMING TABLE <name>
    DROP STREAMING TABLE [IF EXISTS] <name>

It only extends sqlglot's tables: `WINDOW` followed by TUMBLING, SLIDING or TIME_INTERVAL
becomes an `SplWindow` node under the SELECT's "sx_window" arg; any other `WINDOW` keeps its
standard meaning (named windows). Validation lives in window_model.py.
"""

from __future__ import annotations

import functools

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import TokenType

# Every error the parser finds is a syntax error (SQL_EXT_WINDOW_SYNTAX).
from sql_ext.sql.errors import syntax_error_at as error_at
from sql_ext.sql.spelling import WINDOW_KINDS, did_you_mean, misspelt_window, nearest

POLICIES = ("COUNT", "DELTA", "TIME", "PUNCT")
EVICTIONS = ("AGE", "COUNT", "TUPLES")
EMITS = ("INCOMPLETE", "EVICTED", "FINAL", "EARLY")
# The words that may follow a window's policy or ON expression.
CLAUSE_WORDS = ("TRIGGER", "OVER", "WATERMARK", "LATE", "PARTITION", "EMIT")


class SplPolicy(exp.Expression):
    """A policy call such as COUNT(4) or DELTA(ts, 60): `this` is the name, the args follow."""

    arg_types = {"this": True, "expressions": False}

    @property
    def name(self) -> str:
        return self.this.upper()


class SplWindow(exp.Expression):
    """The window clause of one SELECT (kept under Select.args["sx_window"])."""

    arg_types = {
        "this": True,  # TUMBLING | SLIDING | TIME_INTERVAL
        "policy": False,  # TUMBLING policy or SLIDING eviction
        "trigger": False,  # SLIDING trigger
        "interval": False,  # TIME_INTERVAL arguments (a list)
        "on": False,  # TIME_INTERVAL event time
        "partition_by": False,
        "order_by": False,
        "watermark": False,  # SplPolicy DELAY(d) or BY(expr)
        "idle": False,  # WATERMARK DELAY d IDLE <duration>
        "late_rows": False,  # LATE ROWS INTO <table> (exp.Table)
        "eviction": False,  # SplPolicy AGE(s) | COUNT(n) | TUPLES(n)
        "emit": False,  # list of exp.Var: INCOMPLETE, EVICTED, FINAL, EARLY
        "early_every": False,  # EMIT EARLY EVERY <duration>
    }

    @property
    def kind(self) -> str:
        return self.this.upper()


class CreateStreamingTable(exp.Expression):
    """CREATE STREAMING TABLE: `this` the table, `expression` the windowed SELECT."""

    arg_types = {"this": True, "expression": True, "location": False, "checkpoint": False,
                 "trigger": False,  # None (AVAILABLE NOW) or a duration expression
                 "trigger_given": False,  # a TRIGGER clause was read (it may be AVAILABLE NOW)
                 "partitioned_by": False, "properties": False,  # column names; (key, value)s
                 "replace": False, "alter": False,
                 "query_start": False}  # where the query's text starts


class ShowStreams(exp.Expression):
    arg_types = {}


class StopStream(exp.Expression):
    arg_types = {"this": True}


class RefreshStreamingTable(exp.Expression):
    arg_types = {"this": True}


class DropStreamingTable(exp.Expression):
    arg_types = {"this": True, "exists": False}


def mark_position(node: exp.Expression, token) -> exp.Expression:
    """Remembers where a clause started, so validation errors can name line and column."""
    node.meta["sx_line"] = token.line
    node.meta["sx_column"] = max(1, token.col - len(token.text) + 1)
    return node


class SqlExtParser(SparkParser):
    QUERY_MODIFIER_PARSERS = {
        **SparkParser.QUERY_MODIFIER_PARSERS,
        TokenType.WINDOW: lambda self: self._parse_window_modifier(),
    }

    _sx_event_time = False

    def parse(self, raw_tokens, sql=None):
        # A misspelt window word is reported before sqlglot's parser turns it into something
        # else (an alias, a named window) or a bare syntax error.
        misspelt = misspelt_window(raw_tokens)
        if misspelt is not None:
            raise misspelt
        return super().parse(raw_tokens, sql)

    def _parse_window(self, this, alias=False):
        # TIME_INTERVAL(...) ON f(ts) OVER (...): the OVER is the SPL window's, not f's.
        if self._sx_event_time and self._curr is not None \
                and self._curr.token_type == TokenType.OVER:
            return this
        return super()._parse_window(this, alias)

    def _can_parse_named_window(self) -> bool:
        # WINDOW can be an implicit alias (`SELECT 1 window`); before a window kind it is our
        # clause, also in a SELECT without FROM (which then gets its own error, not "Invalid
        # expression" at the window kind).
        if self._curr is not None and self._curr.token_type == TokenType.WINDOW \
                and self._next is not None and self._next.text.upper() in WINDOW_KINDS:
            return True
        return super()._can_parse_named_window()

    def _parse_statement(self):
        start = self._curr
        if self._match_text_seq("CREATE", "STREAMING", "TABLE"):
            return mark_position(self._parse_create_streaming_table(), start)
        if self._match_text_seq("CREATE", "OR", "REPLACE", "STREAMING", "TABLE"):
            statement = self._parse_create_streaming_table()
            statement.set("replace", True)
            return mark_position(statement, start)
        if self._match_text_seq("ALTER", "STREAMING", "TABLE"):
            statement = self._parse_create_streaming_table()
            statement.set("alter", True)
            return mark_position(statement, start)
        if self._match_text_seq("REFRESH", "STREAMING", "TABLE"):
            return mark_position(RefreshStreamingTable(this=self._parse_table_parts()), start)
        if self._match_text_seq("DROP", "STREAMING", "TABLE"):
            exists = self._match_text_seq("IF", "EXISTS")
            return mark_position(DropStreamingTable(this=self._parse_table_parts(),
                                                    exists=exists), start)
        if start.token_type == TokenType.SHOW and self._next is not None \
                and self._next.text.strip().upper() == "STREAMS":  # SHOW's tail is one string
            self._advance(2)
            return mark_position(ShowStreams(), start)
        if self._match_text_seq("STOP", "STREAM"):
            return mark_position(StopStream(this=self._parse_table_parts()), start)
        return super()._parse_statement()

    def _parse_create_streaming_table(self) -> CreateStreamingTable:
        statement = CreateStreamingTable(this=self._parse_table_parts())
        while not self._match(TokenType.ALIAS):
            token = self._curr
            if self._match_text_seq("LOCATION") or self._match_text_seq("CHECKPOINT"):
                clause = self._prev.text.lower()
                if statement.args.get(clause) is not None:
                    raise error_at(self._prev, f"{clause.upper()} is given twice")
                if not self._match(TokenType.STRING):
                    raise error_at(self._curr or self._prev,
                                   f"{clause.upper()} must be followed by a quoted path")
                statement.set(clause, exp.Literal.string(self._prev.text))
            elif self._match(TokenType.PARTITION_BY):
                self._once(statement, "partitioned_by", "PARTITIONED BY")
                statement.set("partitioned_by", [c.name for c in self._parse_wrapped_id_vars()])
            elif self._match_text_seq("TBLPROPERTIES"):
                self._once(statement, "properties", "TBLPROPERTIES")
                statement.set("properties", self._parse_tblproperties())
            elif self._match(TokenType.TRIGGER):
                # Given twice, the second would silently win (AVAILABLE NOW leaves no value).
                self._once(statement, "trigger_given", "TRIGGER")
                statement.set("trigger_given", exp.true())
                if self._match_text_seq("AVAILABLE", "NOW"):
                    statement.set("trigger", None)
                elif self._match_text_seq("EVERY"):
                    token = self._curr or self._prev
                    statement.set("trigger", mark_position(
                        self._required(self._parse_term(), "TRIGGER EVERY <duration>"), token))
                else:
                    raise error_at(self._curr or token,
                                   "TRIGGER must be followed by AVAILABLE NOW or EVERY <duration>")
            else:
                found = token.text if token else "end of statement"
                raise error_at(token or self._prev,
                               "expected PARTITIONED BY, LOCATION, CHECKPOINT, TBLPROPERTIES, "
                               f"TRIGGER or AS in a STREAMING TABLE statement, found {found}")
        if self._curr is not None:
            statement.set("query_start", self._curr.start)
        statement.set("expression", self._parse_select())
        return statement

    def _required(self, node, what: str):
        """`node`, or a positioned error that names what is missing where it should be."""
        if node is None:
            found = self._curr.text if self._curr else "end of statement"
            raise error_at(self._curr or self._prev, f"expected {what}, found {found}")
        return node

    def _once(self, statement: CreateStreamingTable, arg: str, clause: str) -> None:
        if statement.args.get(arg) is not None:
            raise error_at(self._prev, f"{clause} is given twice")

    def _parse_tblproperties(self) -> list[tuple[str, str]]:
        """('key' = 'value', ...): quoted keys and values, as Delta's CREATE TABLE takes them."""
        if not self._match(TokenType.L_PAREN):
            raise error_at(self._curr or self._prev, "TBLPROPERTIES must be followed by (...)")
        found = []
        while True:
            key = self._curr
            if not self._match(TokenType.STRING) or not self._match(TokenType.EQ) \
                    or not self._match(TokenType.STRING):
                raise error_at(self._curr or key, "TBLPROPERTIES takes 'key' = 'value' pairs")
            found.append((key.text, self._prev.text))
            if not self._match(TokenType.COMMA):
                break
        if not self._match(TokenType.R_PAREN):
            raise error_at(self._curr or self._prev, "expected ) to close TBLPROPERTIES (...)")
        return found

    def _parse_window_modifier(self):
        after = self._next
        if after is None or after.text.upper() not in WINDOW_KINDS:
            return "windows", self._parse_window_clause()
        self._advance()  # WINDOW
        return "sx_window", self._parse_spl_window()

    def _parse_spl_window(self) -> SplWindow:
        start = self._curr
        kind = start.text.upper()
        self._advance()
        window = mark_position(SplWindow(this=kind), start)
        if kind == "TIME_INTERVAL":
            window.set("interval", self._parse_call_args(start))
            if not self._match(TokenType.ON):
                raise error_at(self._curr or self._prev, "TIME_INTERVAL(...) needs ON <event time>")
            self._sx_event_time = True  # a call before OVER is not a window function here
            try:
                window.set("on", self._required(self._parse_assignment(),
                                                "TIME_INTERVAL(...) ON <event time>"))
            finally:
                self._sx_event_time = False
        else:
            window.set("policy", self._parse_policy(POLICIES, f"{kind} window policy"))
            if self._match(TokenType.TRIGGER):
                window.set("trigger", self._parse_policy(POLICIES, "TRIGGER policy"))
        self._parse_over(window)
        if self._match_text_seq("WATERMARK"):
            token = self._prev
            if self._match_text_seq("DELAY"):
                mode, arg = "DELAY", self._required(self._parse_term(),
                                                    "WATERMARK DELAY <duration>")
                if self._match_text_seq("IDLE"):
                    idle = self._curr or self._prev
                    window.set("idle", mark_position(self._required(
                        self._parse_term(), "WATERMARK DELAY d IDLE <duration>"), idle))
            elif self._match_text_seq("BY"):
                mode, arg = "BY", self._required(self._parse_assignment(),
                                                 "WATERMARK BY <expression>")
            else:
                raise error_at(self._curr or token, "WATERMARK must be followed by DELAY or BY"
                               + did_you_mean(self._curr, ("DELAY", "BY")))
            window.set("watermark", mark_position(SplPolicy(this=mode, expressions=[arg]), token))
        if self._match_text_seq("LATE"):
            token = self._prev
            if not self._match_text_seq("ROWS", "INTO"):
                raise error_at(self._curr or token, "LATE must be followed by ROWS INTO <table>")
            window.set("late_rows", mark_position(self._required(
                self._parse_table_parts(), "LATE ROWS INTO <table>"), token))
        if self._match(TokenType.PARTITION):
            token = self._prev
            if not self._match_text_seq("EVICTION"):
                raise error_at(self._curr or token, "PARTITION must be followed by EVICTION"
                               + did_you_mean(self._curr, ("EVICTION",)))
            window.set("eviction", self._parse_policy(EVICTIONS, "PARTITION EVICTION policy"))
        emits = []
        while self._match_text_seq("EMIT"):
            token = self._curr
            if not self._match_texts(EMITS):
                raise error_at(token or self._prev, "EMIT must be followed by INCOMPLETE, "
                                                    "EVICTED, FINAL or EARLY EVERY <duration>"
                               + did_you_mean(token, EMITS))
            emits.append(mark_position(exp.var(self._prev.text.upper()), self._prev))
            if emits[-1].name == "EARLY":
                if not self._match_text_seq("EVERY"):
                    raise error_at(self._curr or self._prev,
                                   "EMIT EARLY must be followed by EVERY <duration>")
                every = self._curr or self._prev
                window.set("early_every", mark_position(self._required(
                    self._parse_term(), "EMIT EARLY EVERY <duration>"), every))
        if emits:
            window.set("emit", emits)
        after = self._curr
        near = nearest(after.text, CLAUSE_WORDS) \
            if after is not None and after.token_type == TokenType.VAR else None
        if near:
            raise error_at(after, f"{after.text} after the window clause: did you mean {near}?")
        return window

    def _parse_over(self, window: SplWindow) -> None:
        if not self._match(TokenType.OVER):
            return
        if not self._match(TokenType.L_PAREN):
            raise error_at(self._curr or self._prev, "OVER must be followed by (")
        if self._match(TokenType.PARTITION_BY):
            keys = self._parse_csv(self._parse_assignment)
            if not keys or None in keys:
                raise error_at(self._curr or self._prev,
                               "PARTITION BY inside OVER needs a list of expressions")
            window.set("partition_by", keys)
        if self._match(TokenType.ORDER_BY):
            token = self._curr
            ordered = self._required(self._parse_ordered(), "ORDER BY <arrival expression>")
            if ordered.this is None:
                raise error_at(token or self._prev,
                               "ORDER BY inside OVER needs an arrival expression")
            if ordered.args.get("desc"):
                raise error_at(token, "ORDER BY inside OVER is the arrival order: it is ascending")
            window.set("order_by", mark_position(ordered.this, token))
            if self._match(TokenType.COMMA):
                raise error_at(self._prev, "ORDER BY inside OVER takes one arrival expression")
        if not self._match(TokenType.R_PAREN):
            raise error_at(self._curr or self._prev, "expected ) to close OVER (...)")

    def _parse_policy(self, names, what: str) -> SplPolicy:
        token = self._curr
        if token is None or token.text.upper() not in names:
            found = token.text if token else "end of statement"
            raise error_at(token or self._prev, f"expected a {what} ({', '.join(names)}), "
                                                f"found {found}" + did_you_mean(token, names))
        self._advance()
        args = self._parse_call_args(token)
        return mark_position(SplPolicy(this=token.text.upper(), expressions=args), token)

    def _parse_call_args(self, name_token) -> list:
        if not self._match(TokenType.L_PAREN):
            raise error_at(self._curr or name_token, f"{name_token.text.upper()} needs (...)")
        if self._match(TokenType.R_PAREN):
            return []
        args = []
        while True:
            token = self._curr
            args.append(mark_position(self._required(
                self._parse_lambda(), f"an argument of {name_token.text.upper()}(...)"), token))
            if not self._match(TokenType.COMMA):
                break
        if not self._match(TokenType.R_PAREN):
            raise error_at(self._curr or self._prev, f"expected ) to close {name_token.text}(...)")
        return args


class SqlExt(Spark):
    """Spark SQL with SPL windows."""

    Parser = SqlExtParser


@functools.lru_cache(maxsize=128)
def _tokenized(sql: str) -> tuple:
    return tuple(SqlExt().tokenize(sql))


def tokenize(sql: str) -> list:
    """The tokens of `sql`, in the extension dialect. The rewriter's steps (statement and window
    detection, parameters, the leading text, the parse) each read a statement's tokens: the
    text is tokenized once and they share its tokens, which neither they nor sqlglot's parser
    change (a list of its own for each caller)."""
    return list(_tokenized(sql))


def has_window_clause(sql: str) -> bool:
    """True when the text uses the extension: WINDOW followed by a window kind (token level),
    or a misspelling of the clause (spelling.py), which the extension's parser reports."""
    try:
        tokens = tokenize(sql)
    except Exception:  # noqa: BLE001 - untokenizable text is not ours to report
        return False
    return any(
        a.token_type == TokenType.WINDOW and b.text.upper() in WINDOW_KINDS
        for a, b in zip(tokens, tokens[1:])
    ) or misspelt_window(tokens) is not None
