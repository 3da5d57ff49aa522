"""The string functions of a criterion in SQL (`text_sql.contains(c.code, part)`): what
`functions` computes in memory, computed by the database alike on SQLite and PostgreSQL.

The public path of `loom.runtime.storage.text_sql` (generated code imports this one)."""

from loom.runtime.storage.text_sql import *  # noqa: F403
