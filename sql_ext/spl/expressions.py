"""SPL expressions -> Spark SQL expressions, with the SPL type of each, where SQL means the
same: arithmetic (integer division stays integral), comparisons, boolean logic, casts,
literals with their SPL types, lists, maps and tuples, and the standard toolkit's functions
that have a Spark counterpart. Anything else raises `Untranslatable` with the construct and
why, so the invocation is reported instead of translated wrongly."""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree

from sql_ext.spl.types import SplType, UnsupportedType, quote, spark_type, type_of, wider


class Untranslatable(ValueError):
    """An SPL construct SQL cannot express exactly; `node` says where."""

    def __init__(self, reason: str, node=None):
        super().__init__(reason)
        self.reason = reason
        self.node = node


BOOLEAN, INT32, INT64, FLOAT64, RSTRING = (SplType(k) for k in
                                           ("boolean", "int32", "int64", "float64", "rstring"))


@dataclass
class Scope:
    """What names mean inside one invocation: the input's attributes, the names that denote
    the input tuple itself (its stream names and port alias), composite parameters bound to
    expressions, and submission-time values."""

    attributes: dict[str, SplType]
    tuple_names: set[str] = field(default_factory=set)
    params: dict[str, Tree] = field(default_factory=dict)
    submission: dict[str, str] = field(default_factory=dict)
    pane_functions: bool = False  # intervalStart() and friends (a timeInterval Aggregate)
    # An attribute's SQL where it is not a column of the table read (a Functor's output,
    # inlined into the streaming table that reads the Functor's source).
    columns: dict[str, str] = field(default_factory=dict)

    def column(self, name: str) -> str:
        return self.columns.get(name, quote(name))


def node_place(node) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line, node.column
    meta = getattr(node, "meta", None)
    return getattr(meta, "line", 0), getattr(meta, "column", 0)


def number(text: str) -> tuple[str, SplType]:
    """An SPL numeric literal as Spark SQL, with its SPL type (suffixes: s/u signedness,
    b/h/w/l size; on floats w/l size and d decimal)."""
    lowered = text.lower()
    if lowered.startswith("0x"):
        digits = lowered[2:].rstrip("suhbwl")
        suffix = lowered[2 + len(digits):]
        value = int(digits, 16)
        return _integer(str(value), suffix)
    body = lowered.rstrip("abcdefghijklmnopqrstuvwxyz")
    suffix = lowered[len(body):]
    if "e" in body or "." in body or "d" in suffix:
        if "d" in suffix:
            kind = {"w": "decimal32", "l": "decimal128"}.get(suffix.replace("d", ""), "decimal64")
            return f"CAST('{body}' AS {spark_type(SplType(kind))})", SplType(kind)
        if suffix == "w":
            return f"CAST({body}D AS FLOAT)", SplType("float32")
        return f"{body}D", FLOAT64
    return _integer(body, suffix)


def _integer(digits: str, suffix: str) -> tuple[str, SplType]:
    size = {"b": 8, "h": 16, "w": 32, "l": 64}.get(suffix.replace("u", "").replace("s", ""), 32)
    kind = SplType(("uint" if "u" in suffix else "int") + str(size))
    if kind == INT32:
        return digits, kind
    if kind == INT64:
        return digits + "L", kind
    return f"CAST({digits} AS {spark_type(kind)})", kind


def string_literal(text: str) -> str:
    """An SPL string literal ("...", u"...", r"...") as a Spark SQL one."""
    body = text[text.index('"') + 1:-1]
    return "'" + body.replace("\\\"", "\"").replace("'", "\\'") + "'"


def constant(tree, scope: Scope):
    """The value of a constant SPL expression (window sizes, durations): numbers, strings,
    arithmetic, casts, composite parameters and submission/compile-time values."""
    if isinstance(tree, Tree) and tree.data == "number":
        text = str(tree.children[0]).lower()
        body = text.rstrip("abcdefghijklmnopqrstuvwxyz") if not text.startswith("0x") else text
        return int(body, 0) if body.isdigit() or body.startswith("0x") else float(body)
    if isinstance(tree, Tree) and tree.data == "string":
        return string_literal(str(tree.children[0]))[1:-1]
    if isinstance(tree, Tree) and tree.data == "param_ref":
        name = str(tree.children[0])
        if name not in scope.params:
            raise Untranslatable(f"composite parameter {name} has no value", tree)
        return constant(scope.params[name], scope)
    if isinstance(tree, Tree) and tree.data == "neg":
        return -constant(tree.children[1], scope)
    if isinstance(tree, Tree) and tree.data == "cast":
        value = constant(tree.children[1], scope)
        kind = str(tree.children[0].children[0])
        if kind.startswith(("int", "uint")):
            return int(float(value))
        if kind.startswith(("float", "decimal")):
            return float(value)
        return str(value)
    if isinstance(tree, Tree) and tree.data == "binop":
        left, op, right = tree.children
        a, b = constant(left, scope), constant(right, scope)
        if str(op) == "+":
            return a + b
        if str(op) == "-":
            return a - b
        if str(op) == "*":
            return a * b
        if str(op) == "/":
            return a // b if isinstance(a, int) and isinstance(b, int) else a / b
    if isinstance(tree, Tree) and tree.data == "call":
        name = str(tree.children[0]).rpartition("::")[2]
        if name in ("getSubmissionTimeValue", "getCompileTimeValue"):
            args = [constant(a, scope) for a in tree.children[1:]]
            if args and args[0] in scope.submission:
                return scope.submission[args[0]]
            if len(args) > 1:
                return args[1]
            raise Untranslatable(f"{name}({args[0]!r}) has no default: give it with "
                                 f"--param {args[0]}=<value>", tree)
    raise Untranslatable("not a constant the translator can evaluate", tree)


def _args(tree: Tree) -> list:
    return list(tree.children[1:])


# SPL standard-toolkit functions with a Spark counterpart: name -> (arity, SQL template,
# result type; None: the first argument's type).
FUNCTIONS = {
    "abs": (1, "ABS({0})", None),
    "sqrt": (1, "SQRT({0})", FLOAT64),
    "exp": (1, "EXP({0})", FLOAT64),
    "log": (1, "LN({0})", FLOAT64),
    "log10": (1, "LOG10({0})", FLOAT64),
    "pow": (2, "POWER({0}, {1})", FLOAT64),
    "floor": (1, "CAST(FLOOR({0}) AS DOUBLE)", FLOAT64),
    "ceil": (1, "CAST(CEIL({0}) AS DOUBLE)", FLOAT64),
    "upper": (1, "UPPER({0})", RSTRING),
    "lower": (1, "LOWER({0})", RSTRING),
    "concat": (2, "CONCAT({0}, {1})", RSTRING),
    "size": (1, "CAST(SIZE({0}) AS INT)", INT32),
}


def translate(tree, scope: Scope) -> tuple[str, SplType | None]:
    """(Spark SQL text, SPL type or None when unknown) of an SPL expression."""
    kind = tree.data if isinstance(tree, Tree) else None
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise Untranslatable(f"the SPL construct '{kind}' has no SQL translation", tree)
    return handler(tree, scope)


def _name(tree, scope):
    name = str(tree.children[0])
    if name in scope.attributes:
        return scope.column(name), scope.attributes[name]
    if name in scope.tuple_names:
        columns = ", ".join(f"'{n}', {scope.column(n)}" for n in scope.attributes)
        return f"NAMED_STRUCT({columns})", SplType("tuple", tuple(scope.attributes.items()))
    raise Untranslatable(f"'{name}' is not an attribute of the input stream", tree)


def _member(tree, scope):
    base, field_name = tree.children[0], str(tree.children[1])
    if isinstance(base, Tree) and base.data == "name" and str(base.children[0]) in \
            scope.tuple_names:
        if field_name not in scope.attributes:
            raise Untranslatable(f"'{field_name}' is not an attribute of the input stream", tree)
        return scope.column(field_name), scope.attributes[field_name]
    sql, t = translate(base, scope)
    if t is None or t.value.kind != "tuple":
        raise Untranslatable(f"'.{field_name}' on a value that is not a tuple", tree)
    return f"{sql}.{quote(field_name)}", t.value.attribute(field_name)


def _param_ref(tree, scope):
    name = str(tree.children[0])
    if name not in scope.params:
        raise Untranslatable(f"composite parameter {name} has no value", tree)
    return translate(scope.params[name], scope)


def _number(tree, scope):
    return number(str(tree.children[0]))


def _string(tree, scope):
    text = str(tree.children[0])
    return string_literal(text), SplType("ustring" if text.startswith("u") else "rstring")


def _binop(tree, scope):
    left, op, right = tree.children
    a, ta = translate(left, scope)
    b, tb = translate(right, scope)
    op = str(op)
    if op in ("==", "!="):
        return f"({a} {'=' if op == '==' else '<>'} {b})", BOOLEAN
    if op in ("<", "<=", ">", ">="):
        return f"({a} {op} {b})", BOOLEAN
    if op == "+" and ((ta and ta.string) or (tb and tb.string)):
        return f"CONCAT({a}, {b})", ta if ta and ta.string else tb
    if op in ("+", "-", "*", "%"):
        return f"({a} {op} {b})", _numeric(ta, tb)
    if op == "/":
        t = _numeric(ta, tb)
        if t is not None and t.integral:
            return f"CAST(({a} DIV {b}) AS {spark_type(t)})", t
        return f"({a} / {b})", t
    if op in ("&", "|", "^"):
        return f"({a} {op} {b})", _numeric(ta, tb)
    if op in ("<<", ">>"):
        fn = "SHIFTLEFT" if op == "<<" else "SHIFTRIGHT"
        return f"{fn}({a}, {b})", ta
    raise Untranslatable(f"the operator {op} has no SQL translation", tree)


def _numeric(ta, tb):
    if ta is None or tb is None:
        return ta or tb
    return wider(ta, tb)


def _logical(word: str):
    def handler(tree, scope):
        left, right = (translate(c, scope)[0] for c in tree.children)
        return f"({left} {word} {right})", BOOLEAN
    return handler


def _not(tree, scope):
    return f"(NOT {translate(tree.children[0], scope)[0]})", BOOLEAN


def _neg(tree, scope):
    sql, t = translate(tree.children[1], scope)
    return f"(-{sql})", t


def _bnot(tree, scope):
    sql, t = translate(tree.children[0], scope)
    return f"(~{sql})", t


def _conditional(tree, scope):
    condition = translate(tree.children[0], scope)[0]
    a, ta = translate(tree.children[1], scope)
    b, tb = translate(tree.children[2], scope)
    return f"IF({condition}, {a}, {b})", ta or tb


def _in(tree, scope):
    value = translate(tree.children[0], scope)[0]
    collection = translate(tree.children[1], scope)[0]
    return f"ARRAY_CONTAINS({collection}, {value})", BOOLEAN


def _cast(tree, scope):
    try:
        target = type_of(tree.children[0], lambda name: None)
        sql_type = spark_type(target)
    except UnsupportedType as error:
        raise Untranslatable(str(error), tree) from None
    sql, source = translate(tree.children[1], scope)
    if target.string and (source is None or not (source.string or source.integral
                                                 or source.kind == "boolean")):
        # SPL writes timestamps as (seconds,nanoseconds,machine), floats and lists its own way.
        raise Untranslatable(f"(rstring) of {source or 'this value'}: SPL's text for it differs "
                             "from Spark's", tree)
    return f"CAST({sql} AS {sql_type})", target


def _index(tree, scope):
    base, t = translate(tree.children[0], scope)
    key, _ = translate(tree.children[1], scope)
    element = None
    if t is not None and t.kind in ("list", "map"):
        element = t.args[-1]
    return f"{base}[{key}]", element


def _list(tree, scope):
    items = [translate(c, scope) for c in tree.children]
    element = items[0][1] if items else None
    return f"ARRAY({', '.join(s for s, _ in items)})", SplType("list", (element,)) \
        if element else None


def _map(tree, scope):
    parts = []
    for entry in tree.children:
        parts += [translate(entry.children[0], scope)[0], translate(entry.children[1], scope)[0]]
    return f"MAP({', '.join(parts)})", None


def _tuple(tree, scope):
    parts, attrs = [], []
    for entry in tree.children:
        sql, t = translate(entry.children[1], scope)
        parts += [f"'{entry.children[0]}'", sql]
        attrs.append((str(entry.children[0]), t))
    return f"NAMED_STRUCT({', '.join(parts)})", SplType("tuple", tuple(attrs))


def _true(tree, scope):
    return "TRUE", BOOLEAN


def _false(tree, scope):
    return "FALSE", BOOLEAN


PANE_FUNCTIONS = {
    "intervalStart": ("PANE_START()", SplType("timestamp")),
    "intervalEnd": ("PANE_END()", SplType("timestamp")),
    "paneIndex": ("CAST(PANE_INDEX() AS BIGINT)", SplType("uint32")),
    # Sys.PaneTiming's names for PANE_TIMING()'s values.
    "paneTiming": ("CASE PANE_TIMING() WHEN 'ON_TIME' THEN 'paneOnComplete' WHEN 'LATE' THEN "
                   "'paneLate' WHEN 'EARLY' THEN 'paneEarly' END", SplType("enum")),
}


def _call(tree, scope):
    name = str(tree.children[0]).rpartition("::")[2]
    args = _args(tree)
    if name in ("getSubmissionTimeValue", "getCompileTimeValue"):
        value = constant(tree, scope)
        return string_literal('"' + str(value) + '"'), RSTRING
    if name in PANE_FUNCTIONS:
        if not scope.pane_functions:
            raise Untranslatable(f"{name}() belongs to the output of a timeInterval Aggregate",
                                 tree)
        return PANE_FUNCTIONS[name]
    if name in ("min", "max") and len(args) == 2:
        a, ta = translate(args[0], scope)
        b, _ = translate(args[1], scope)
        return f"{'LEAST' if name == 'min' else 'GREATEST'}({a}, {b})", ta
    if name == "length" and len(args) == 1:
        sql, t = translate(args[0], scope)
        length = "LENGTH" if t is not None and t.kind == "ustring" else "OCTET_LENGTH"
        if t is not None and t.kind in ("list", "set", "map"):
            length = "SIZE"
        return f"CAST({length}({sql}) AS INT)", INT32
    if name == "substring" and len(args) == 3:
        s, t = translate(args[0], scope)
        start, _ = translate(args[1], scope)
        count, _ = translate(args[2], scope)
        return f"SUBSTRING({s}, ({start}) + 1, {count})", t  # SPL counts from 0
    if name in FUNCTIONS and FUNCTIONS[name][0] == len(args):
        _, template, result = FUNCTIONS[name]
        translated = [translate(a, scope) for a in args]
        return template.format(*(s for s, _ in translated)), result or translated[0][1]
    raise Untranslatable(f"the function {name}() has no Spark SQL counterpart in the "
                         "translator", tree)


_HANDLERS = {
    "name": _name, "member": _member, "param_ref": _param_ref, "number": _number,
    "string": _string, "binop": _binop, "and_": _logical("AND"), "or_": _logical("OR"),
    "not_": _not, "neg": _neg,
    "bnot": _bnot, "conditional": _conditional, "in_": _in, "cast": _cast, "index": _index,
    "list_lit": _list, "map_lit": _map, "tuple_lit": _tuple, "true": _true, "false": _false,
    "call": _call,
}
