"""The command line explains itself: every command and flag has help text, and --version
prints the package's version (from sql_ext/version.py, as the wheel's metadata has it)."""

import argparse
import importlib.metadata
import subprocess
import sys

import sql_ext
from sql_ext.cli import build_parser


def _flags(parser: argparse.ArgumentParser, path: tuple = ()):
    """(command path, action) of every argument of `parser` and its commands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield (*path, name), action  # the command itself
                yield from _flags(command, (*path, name))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action


def test_every_command_and_flag_has_help():
    missing = []
    for path, action in _flags(build_parser()):
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            if not helps.get(path[-1]):
                missing.append(" ".join(path))
        elif not action.help or action.help == argparse.SUPPRESS:
            missing.append(" ".join([*path, *(action.option_strings or [action.dest])]))
    assert missing == []
    commands = {path for path, _ in _flags(build_parser()) if len(path) == 1}
    assert {("thriftserver",), ("connect-server",), ("transpile",), ("run-examples",)} <= commands


def test_version():
    done = subprocess.run([sys.executable, "-m", "sql_ext.cli", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"sql-ext {sql_ext.__version__}"
    assert importlib.metadata.version("sql-ext") == sql_ext.__version__
