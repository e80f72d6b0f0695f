"""sql-ext's version: written here once; pyproject.toml reads it (tool.setuptools.dynamic),
`sql_ext.__version__` and `sql-ext --version` show it."""

__version__ = "0.1.0"
