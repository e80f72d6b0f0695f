"""Virtual environments for tests that run sql-ext where only some packages are installed (not
a test): the wheel's venv and the executors' Python (test_deploy.py), a Python with sqlglot
alone (test_grammar_alone.py)."""

import importlib.metadata
import subprocess
import sys
from pathlib import Path


def linked_venv(folder: Path, names, pip: bool = False) -> Path:
    """A virtual environment holding the distributions `names` and what they require, linked
    from this test run's own installation (the same versions pip would install, without
    unpacking 450 MB of pyspark again); its Python."""
    subprocess.run([sys.executable, "-m", "venv", *([] if pip else ["--without-pip"]),
                    str(folder)], check=True)
    python = folder / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                                "'purelib'))"], capture_output=True, text=True,
                               check=True).stdout.strip())
    for dist in _with_requirements(names):
        for top in {Path(str(f)).parts[0] for f in dist.files or ()} - {"..", "__pycache__"}:
            target = Path(dist.locate_file(top))
            if target.exists() and not (site / top).exists():
                (site / top).symlink_to(target)
    return python


def _with_requirements(names) -> list:
    """The distributions `names` and everything they require (no extras), installed here."""
    from packaging.requirements import Requirement

    found, todo = {}, list(names)
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        if dist.metadata["Name"].lower() in found:
            continue
        found[dist.metadata["Name"].lower()] = dist
        for line in dist.requires or ():
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())
