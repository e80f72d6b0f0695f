"""The package's layers, read from its source (no Spark): imports go downwards only, no cycle,
no import inside a function to dodge one, no pyspark in the SQL layer, and no call into the
JVM outside sql_ext/jvm.py. Each rule is also run on a small made-up package that breaks it, so
a check that stopped finding anything would fail here too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sql_ext"

# Lowest first; a module may import its own layer's modules (without a cycle) and lower ones.
LAYERS = [
    ("sql_ext.sql", "sql_ext.spl", "sql_ext.jars", "sql_ext.logs", "sql_ext.version",
     "sql_ext.spark_settings"),
    ("sql_ext.jvm",),
    ("sql_ext.udaf", "sql_ext.metrics", "sql_ext.metastore"),
    ("sql_ext.streaming",),
    ("sql_ext.server",),
    ("sql_ext.session",),
    ("sql_ext.dbt", "sql_ext.samples"),
    ("sql_ext.cli",),
    ("sql_ext",),  # the package's own __init__: the public API
]
# Where an import inside a function is the point: commands load what they run, so that
# `sql-ext transpile` starts without pyspark.
LATE_IMPORTS_ALLOWED = {"sql_ext.cli"}
# Dependencies imported when used: dbt is optional; tqdm shows a jar download, and stays out
# of `sql-ext transpile`, which starts with sqlglot and Lark alone (tests/test_grammar_alone.py).
OPTIONAL = ("dbt", "tqdm")
# The SQL layer runs without Spark.
SQL_LAYER_FORBIDDEN = ("pyspark", "py4j", "delta", "numpy", "pyarrow")
# py4j's handles on JVM objects: only sql_ext.jvm touches them.
JVM_HANDLES = {"_jvm", "_jdf", "_jsparkSession", "_jsq", "_jsc", "_gateway", "_judf", "_jconf",
               "_jreader", "_jwrite", "_jdsw", "_jseq", "_java_obj"}
JVM_MODULES = ("py4j", "pyspark.java_gateway")


def modules(root: Path) -> dict[str, ast.Module]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = ast.parse(path.read_text(), str(path))
    return found


def _imports(name: str, tree: ast.Module, known: set[str]):
    """(imported module, line, inside a function) of every import of `name`'s module."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    package = name if _is_package(name, known, tree) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        late = id(node) in inside
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, late
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub if sub in known else base), node.lineno, late


def _is_package(name: str, known: set[str], tree) -> bool:
    return any(other.startswith(name + ".") for other in known)


def graph(found: dict[str, ast.Module]) -> dict[str, list[tuple[str, int, bool]]]:
    known = set(found)
    return {name: list(_imports(name, tree, known)) for name, tree in found.items()}


def layer_of(module: str) -> int:
    best = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def problems(found: dict[str, ast.Module]) -> list[str]:
    """Every broken rule, one line each."""
    edges = graph(found)
    seen = []
    for module, imports in edges.items():
        for target, line, late in imports:
            if target.split(".")[0] == "sql_ext" and target in found:
                if target == module:
                    continue
                if layer_of(target) > layer_of(module):
                    seen.append(f"{module}:{line} imports {target}, a higher layer")
                if late and module not in LATE_IMPORTS_ALLOWED:
                    seen.append(f"{module}:{line} imports {target} inside a function")
            elif late and module not in LATE_IMPORTS_ALLOWED \
                    and not target.startswith(OPTIONAL) and target != "__future__":
                seen.append(f"{module}:{line} imports {target} inside a function")
            if layer_of(module) == 0 and target.startswith(SQL_LAYER_FORBIDDEN):
                seen.append(f"{module}:{line} imports {target} in the SQL layer")
            if module != "sql_ext.jvm" and target.startswith(JVM_MODULES):
                seen.append(f"{module}:{line} imports {target}: JVM calls belong in sql_ext.jvm")
    for module, tree in found.items():
        if module == "sql_ext.jvm":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in JVM_HANDLES:
                seen.append(f"{module}:{node.lineno} uses .{node.attr}: JVM calls belong in "
                            "sql_ext.jvm")
    seen += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(edges, set(found))]
    return seen


def cycles(edges, known: set[str]) -> list[list[str]]:
    """One cycle per strongly connected group of modules that import each other."""
    internal = {m: sorted({t for t, _, _ in imports if t in known and t != m})
                for m, imports in edges.items()}
    found, state, stack = [], {}, []

    def visit(module: str) -> None:
        state[module] = "open"
        stack.append(module)
        for target in internal[module]:
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = "done"

    for module in sorted(internal):
        if module not in state:
            visit(module)
    return found


def test_the_package_keeps_its_layers():
    assert problems(modules(PACKAGE)) == []


def test_every_subpackage_says_what_it_owns_and_may_import():
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent == PACKAGE or init.parent.name == "samples":
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "May import" in doc, f"{init}: its docstring says what it may import"


def _made_up(tmp_path: Path, files: dict[str, str]) -> dict[str, ast.Module]:
    for relative, text in files.items():
        path = tmp_path / "sql_ext" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return modules(tmp_path / "sql_ext")


@pytest.mark.parametrize("files, expected", [
    ({"__init__.py": "", "streaming/__init__.py": "", "streaming/a.py": "from sql_ext.streaming import b\n",
      "streaming/b.py": "from sql_ext.streaming import a\n"}, "import cycle"),
    ({"__init__.py": "", "sql/__init__.py": "", "sql/x.py": "import pyspark\n"},
     "in the SQL layer"),
    ({"__init__.py": "", "sql/__init__.py": "", "sql/x.py": "from sql_ext import jvm\n",
      "jvm.py": ""}, "a higher layer"),
    ({"__init__.py": "", "streaming/__init__.py": "",
      "streaming/a.py": "def f():\n    from sql_ext import jvm\n", "jvm.py": ""},
     "inside a function"),
    ({"__init__.py": "", "metrics.py": "def f(df):\n    return df._jdf.queryExecution()\n"},
     "JVM calls belong in sql_ext.jvm"),
    ({"__init__.py": "", "udaf.py": "from py4j.java_gateway import JavaObject\n"},
     "JVM calls belong in sql_ext.jvm"),
])
def test_each_rule_finds_what_breaks_it(tmp_path, files, expected):
    found = problems(_made_up(tmp_path, files))
    assert any(expected in problem for problem in found), found
