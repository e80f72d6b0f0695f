"""The doors clients come in by, and the JVM's calls into Python.

Owns the JVM-to-Python callback (`callback`: the parser's questions about a statement, and the
streaming statements it runs for any client), the Thrift (JDBC/ODBC) server started in this
process (`thrift`), its password authentication (`auth`), TLS (`tls`) and what its
signed-in users may do (`access`: admins, the JVM's access checks), how clients share
it (`sharing`: fair scheduling, statement timeouts) and what operators watch (`monitoring`).

May import: sql_ext.sql, sql_ext.jvm, sql_ext.streaming (the statements a client runs).
"""
