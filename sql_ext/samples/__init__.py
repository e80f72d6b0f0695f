"""The seed examples and their sample data, shipped with the package: `sql-ext run-examples`."""
