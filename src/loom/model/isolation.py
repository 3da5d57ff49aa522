"""The isolation levels a transactional workflow may ask for.

One definition, read by the checker (which names it accepts), the IR (the type of the field) and the
runtime (the SQL it sends on PostgreSQL). SQLite has one level, serialisable, whatever is asked.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

Isolation: TypeAlias = Literal["read_committed", "repeatable_read", "serializable"]

ISOLATION_LEVELS: Final[tuple[Isolation, ...]] = get_args(Isolation)

ISOLATION_SQL: Final[dict[Isolation, str]] = {
    level: level.replace("_", " ").upper() for level in ISOLATION_LEVELS
}
