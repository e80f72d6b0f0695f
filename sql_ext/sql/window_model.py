"""Validates a parsed SplWindow into a WindowModel, with the errors of spec/sql.md section 6.

Every error names the offending part and where it is (line, column).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from sql_ext.sql.dialect import SplPolicy, SplWindow
from sql_ext.sql.errors import WindowSqlError, error_at_node

SECONDS_PER_UNIT = {
    "MICROSECOND": 1e-6, "MILLISECOND": 1e-3, "SECOND": 1.0, "MINUTE": 60.0,
    "HOUR": 3600.0, "DAY": 86400.0, "WEEK": 604800.0,
}
INTERVAL_ARGS = ("duration", "period", "discard", "offset")


@dataclass(frozen=True)
class Policy:
    """One TUMBLING/SLIDING policy. `text` is the policy as written, for messages."""

    name: str  # COUNT | DELTA | TIME | PUNCT
    text: str
    count: int = 0
    seconds: float = 0.0
    delta: float = 0.0
    attribute: exp.Expression | None = None  # DELTA attribute
    marker: exp.Expression | None = None  # PUNCT(expr)


@dataclass(frozen=True)
class Interval:
    duration: float
    period: float
    discard: float
    offset: float


@dataclass
class WindowModel:
    kind: str  # TUMBLING | SLIDING | TIME_INTERVAL
    policy: Policy | None = None
    trigger: Policy | None = None
    interval: Interval | None = None
    event_time: exp.Expression | None = None
    partition_by: list = field(default_factory=list)
    order_by: exp.Expression | None = None
    watermark: SplPolicy | None = None
    eviction: Policy | None = None
    emit: tuple = ()
    early_every: float = 0.0  # EMIT EARLY EVERY, seconds
    idle: float = 0.0  # WATERMARK DELAY d IDLE t, seconds (0: off)
    late_rows: exp.Table | None = None  # LATE ROWS INTO <table>

    @property
    def emit_panes(self) -> str:
        """What the panes hand on: "final", "early" or "" (every update)."""
        return "final" if "FINAL" in self.emit else "early" if "EARLY" in self.emit else ""


def duration_seconds(node: exp.Expression, what: str) -> float:
    """Seconds from a number or an INTERVAL literal; anything else is an error."""
    if isinstance(node, exp.Neg):
        return -duration_seconds(node.this, what)
    if isinstance(node, exp.Paren):
        return duration_seconds(node.this, what)
    if isinstance(node, exp.Literal) and not node.is_string:
        return float(node.this)
    if isinstance(node, exp.Interval):
        value, unit = node.this, node.args.get("unit")
        text = value.this if isinstance(value, exp.Literal) else None
        unit_name = unit.name.upper() if unit is not None else None
        if text is not None and unit_name is None and len(str(text).split()) == 2:
            text, unit_name = str(text).split()
        unit_name = (unit_name or "").upper().rstrip("S")
        try:
            return float(text) * SECONDS_PER_UNIT[unit_name]
        except (TypeError, ValueError, KeyError):
            pass
    raise error_at_node(node, f"{what} must be a number of seconds or an INTERVAL literal, "
                              f"got {node.sql('spark')}")


def _whole_number(node: exp.Expression, what: str) -> int:
    if isinstance(node, exp.Neg):
        return -_whole_number(node.this, what)
    if isinstance(node, exp.Literal) and not node.is_string and node.is_int:
        return int(node.this)
    raise error_at_node(node, f"{what} must be a whole number, got {node.sql('spark')}")


def _policy(node: SplPolicy, role: str) -> Policy:
    name, args = node.name, node.expressions
    text = f"{name}({', '.join(a.sql('spark') for a in args)})"

    def arity(n: int) -> None:
        if len(args) != n:
            raise error_at_node(node, f"{role} {name} takes {n} argument(s): {text}")

    if name == "COUNT":
        arity(1)
        n = _whole_number(args[0], f"{text}: the count")
        if n < 1:
            raise error_at_node(args[0], f"{text}: the count must be at least 1")
        return Policy(name, text, count=n)
    if name == "DELTA":
        arity(2)
        d = duration_seconds(args[1], f"{text}: the delta")
        if d < 0:
            raise error_at_node(args[1], f"{text}: the delta must be >= 0")
        return Policy(name, text, delta=d, attribute=args[0])
    if name == "TIME":
        arity(1)
        s = duration_seconds(args[0], f"{text}: the duration")
        if s <= 0:
            raise error_at_node(args[0], f"{text}: the duration must be > 0")
        return Policy(name, text, seconds=s)
    if name == "PUNCT":
        if len(args) > 1:
            raise error_at_node(node, f"PUNCT takes no argument or one marker condition: {text}")
        return Policy(name, text, marker=args[0] if args else None)
    raise error_at_node(node, f"unknown {role} {name}")


def _eviction(node: SplPolicy) -> Policy:
    args = node.expressions
    text = f"PARTITION EVICTION {node.name}({', '.join(a.sql('spark') for a in args)})"
    if len(args) != 1:
        raise error_at_node(node, f"{text} takes one argument")
    if node.name == "AGE":
        s = duration_seconds(args[0], f"{text}: the age")
        if s <= 0:
            raise error_at_node(args[0], f"{text}: the age must be > 0")
        return Policy("AGE", text, seconds=s)
    n = _whole_number(args[0], f"{text}: the limit")
    if n < 1:
        raise error_at_node(args[0], f"{text}: the limit must be at least 1")
    return Policy(node.name, text, count=n)


def _interval(window: SplWindow) -> Interval:
    values: dict[str, exp.Expression] = {}
    for position, arg in enumerate(window.args.get("interval") or []):
        if isinstance(arg, exp.Kwarg):
            name = arg.this.name.lower()
            if name not in INTERVAL_ARGS:
                raise error_at_node(arg, f"TIME_INTERVAL has no argument named {name} "
                                         f"(it takes {', '.join(INTERVAL_ARGS)})")
            value = arg.expression
            value.meta.setdefault("sx_line", arg.meta.get("sx_line", 1))
            value.meta.setdefault("sx_column", arg.meta.get("sx_column", 0))
            arg = value
        elif values and position >= len(INTERVAL_ARGS):
            raise error_at_node(arg, "TIME_INTERVAL takes at most 4 arguments")
        else:
            name = INTERVAL_ARGS[position] if position < len(INTERVAL_ARGS) else "?"
        if name in values:
            raise error_at_node(arg, f"TIME_INTERVAL argument {name} is given twice")
        values[name] = arg
    if "duration" not in values:
        raise error_at_node(window, "TIME_INTERVAL needs a duration")
    seconds = {k: duration_seconds(v, f"TIME_INTERVAL {k}") for k, v in values.items()}
    duration = seconds["duration"]
    period = seconds.get("period", duration)
    discard = seconds.get("discard", 0.0)
    offset = seconds.get("offset", 0.0)
    if duration <= 0:
        raise error_at_node(values["duration"], "TIME_INTERVAL duration must be > 0")
    if period <= 0:
        raise error_at_node(values["period"], "TIME_INTERVAL period must be > 0")
    if discard < 0:
        raise error_at_node(values["discard"], "TIME_INTERVAL discard age must be >= 0")
    if not 0 <= offset < duration:
        raise error_at_node(values["offset"],
                            f"TIME_INTERVAL offset must be in [0, duration), got {offset:g}")
    return Interval(duration, period, discard, offset % period)


def _check_pane_parts(window: SplWindow, model: WindowModel) -> None:
    """The TIME_INTERVAL parts of spec/sql.md section 8: where they apply, once each."""
    emits = window.args.get("emit") or []
    for name in ("FINAL", "EARLY"):
        if name in model.emit and model.kind != "TIME_INTERVAL":
            what = "EMIT FINAL" if name == "FINAL" else "EMIT EARLY EVERY"
            raise error_at_node(emits[model.emit.index(name)],
                                f"{what} applies to TIME_INTERVAL windows only, not to "
                                f"{model.kind} (which fire once per window anyway)")
    for name in set(model.emit):
        if model.emit.count(name) > 1:
            raise error_at_node(emits[len(model.emit) - 1 - model.emit[::-1].index(name)],
                                f"EMIT {name} is given twice")
    if "FINAL" in model.emit and "EARLY" in model.emit:
        raise error_at_node(emits[max(model.emit.index("FINAL"), model.emit.index("EARLY"))],
                            "EMIT FINAL and EMIT EARLY exclude each other: a final-only pane "
                            "has no early results")
    if model.late_rows is not None and model.kind != "TIME_INTERVAL":
        raise error_at_node(model.late_rows, f"LATE ROWS INTO applies to TIME_INTERVAL windows "
                                             f"only, not to {model.kind} (nothing is late there)")
    every = window.args.get("early_every")
    if every is not None:
        model.early_every = duration_seconds(every, "EMIT EARLY EVERY")
        if model.early_every <= 0:
            raise error_at_node(every, "EMIT EARLY EVERY must be a positive duration")
    idle = window.args.get("idle")
    if idle is not None:
        model.idle = duration_seconds(idle, "WATERMARK IDLE")
        if model.idle <= 0:
            raise error_at_node(idle, "WATERMARK IDLE must be a positive duration")


def validate(window: SplWindow) -> WindowModel:
    """The checked model of one window clause (syntax-level rules of sql.md section 6)."""
    kind = window.kind
    model = WindowModel(kind=kind)
    model.partition_by = list(window.args.get("partition_by") or [])
    model.order_by = window.args.get("order_by")
    model.watermark = window.args.get("watermark")
    model.emit = tuple(v.name for v in window.args.get("emit") or [])
    model.late_rows = window.args.get("late_rows")
    eviction = window.args.get("eviction")
    _check_pane_parts(window, model)
    if kind == "TIME_INTERVAL":
        model.interval = _interval(window)
        model.event_time = window.args.get("on")
        if eviction is not None:
            raise error_at_node(eviction, "PARTITION EVICTION does not apply to TIME_INTERVAL "
                                          "windows (SPL timeInterval windows have none)")
        if "EVICTED" in model.emit:
            raise error_at_node(window.args["emit"][model.emit.index("EVICTED")],
                                "EMIT EVICTED does not apply to TIME_INTERVAL windows")
        return model
    if model.watermark is not None:
        raise error_at_node(model.watermark, f"WATERMARK applies to TIME_INTERVAL windows only, "
                                             f"not to {kind}")
    model.policy = _policy(window.args["policy"], f"{kind} policy")
    trigger = window.args.get("trigger")
    if kind == "TUMBLING" and trigger is not None:
        raise error_at_node(trigger, "a TUMBLING window has no TRIGGER (use SLIDING)")
    if kind == "SLIDING":
        if model.policy.name == "PUNCT":
            raise error_at_node(window.args["policy"], "PUNCT is a TUMBLING policy only; "
                                                       "SLIDING takes COUNT, DELTA or TIME")
        if trigger is None:
            raise error_at_node(window, "a SLIDING window needs TRIGGER <policy>")
        model.trigger = _policy(trigger, "SLIDING trigger")
        if model.trigger.name == "PUNCT":
            raise error_at_node(trigger, "PUNCT cannot be a SLIDING trigger; "
                                         "use COUNT, DELTA or TIME")
    if eviction is not None:
        model.eviction = _eviction(eviction)
    return model


__all__ = ["Interval", "Policy", "WindowModel", "WindowSqlError", "duration_seconds", "validate"]
