"""How large the loads and the kill loops are (not a test): the suite's size in every run, the
full size under `bash python/dev.sh soak` (SQL_EXT_SOAK=1), which runs the tests marked `soak`.

The suite's size keeps every check (each kind of statement, each kind of kill point, each
query) and shrinks what is repetition and scale: fewer clients and statements, fewer kills,
fewer runs. The soak repeats them at the size that finds rare races."""

import os

SOAK = os.environ.get("SQL_EXT_SOAK") == "1"


def size(suite, soak):
    """`soak` under `dev.sh soak`, else `suite`."""
    return soak if SOAK else suite


def examples(suite: int, soak: int, override: str | None = None) -> int:
    """Hypothesis examples of a test: `size(suite, soak)`, or the environment variable
    `override` where it is set (more by hand, e.g. SQL_EXT_CUT_EXAMPLES=200)."""
    if override and os.environ.get(override):
        return int(os.environ[override])
    return size(suite, soak)
