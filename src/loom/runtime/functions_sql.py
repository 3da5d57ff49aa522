"""The built-in functions a criterion computes in SQL (`functions_sql.contains(c.code, part)`,
`functions_sql.year(c.valid_from)`): what `functions` computes in memory, computed by the
database alike on SQLite and PostgreSQL.

The public path of `loom.runtime.storage.functions_sql` (generated code imports this one)."""

from loom.runtime.storage.functions_sql import *  # noqa: F403
