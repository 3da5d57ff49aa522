"""Leased queues: the one definition of the statements that work a table as a queue whose rows are
claimed with a lease, retried with backoff and dead-lettered. The outbox relay works
`__loom_outbox` with them, the scheduler `__loom_timers`.

The table has `status`, `available_at`, `attempts`, `last_error`, `claimed_by` and
`claimed_until`. A row is due when its status is the ready one, `available_at` has come and no live
lease holds it (a lease ends at `claimed_until`: from then on its holder acts on it no more, and
another may claim it). A claim stamps a lease on a batch of due rows in one statement: on
PostgreSQL a CTE whose `FOR UPDATE SKIP LOCKED` runs exactly once, so replicas claim disjoint
batches at the same time instead of queueing on each other's rows; on SQLite a subquery (the
service's writer lock and `BEGIN IMMEDIATE` already serialise claims). Every later statement is
guarded by `claimed_by = :me`: a claimant that lost its lease changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, bindparam, or_, select, update
from sqlalchemy.sql.dml import ReturningUpdate, Update

MAX_ERROR = 2000  # characters of `last_error` kept
# a dead row an operator set aside: no longer listed as a dead letter, never redriven
ARCHIVED = "archived"


class LeasedQueue:
    """The statements on `table`, whose rows are keyed by `key`: a row is due when its status is
    `ready` (and dead when it is `dead`); due rows are claimed in `order`, the claim returning the
    columns `returning`; `only`, when given, narrows what is due.

    Parameters: `claim` :now, :n (batch size), :me, :until; `release` :ids, :me; `retry` :id, :me,
    :attempts, :at, :error; `kill` :id, :me, :attempts, :error; `redrive` :now."""

    def __init__(
        self,
        table: Table,
        *,
        key: str,
        ready: str,
        dead: str,
        order: Sequence[str],
        returning: Sequence[str],
        only: ColumnElement[bool] | None = None,
    ) -> None:
        c = table.c
        self.table = table
        self.key = c[key]
        self.dead = c.status == dead
        self._ready = ready
        due = and_(
            c.status == ready,
            c.available_at <= bindparam("now"),
            or_(c.claimed_until.is_(None), c.claimed_until <= bindparam("now")),
        )
        if only is not None:
            due = and_(only, due)
        due_keys = select(self.key).where(due).order_by(*(c[o] for o in order))
        due_keys = due_keys.limit(bindparam("n"))
        lease: dict[str, Any] = {"claimed_by": bindparam("me"), "claimed_until": bindparam("until")}
        pg_due = due_keys.with_for_update(skip_locked=True).cte("due")
        columns = [c[r] for r in returning]
        self._claim = {
            "postgresql": update(table)
            .where(self.key == pg_due.c[key])
            .values(lease)
            .returning(*columns),
            "sqlite": update(table)
            .where(self.key.in_(due_keys.scalar_subquery()))
            .values(lease)
            .returning(*columns),
        }
        # rows this claimant holds: several (`:ids`), or one (`:id`)
        self.held = and_(
            self.key.in_(bindparam("ids", expanding=True)), c.claimed_by == bindparam("me")
        )
        self.held_one = and_(self.key == bindparam("id"), c.claimed_by == bindparam("me"))
        unleased: dict[str, Any] = {"claimed_by": None, "claimed_until": None}
        self.release = update(table).where(self.held).values(unleased)
        failed: dict[str, Any] = {
            "attempts": bindparam("attempts"),
            "last_error": bindparam("error"),
            **unleased,
        }
        self.retry = (
            update(table).where(self.held_one).values(available_at=bindparam("at"), **failed)
        )
        self.kill = update(table).where(self.held_one).values(status=dead, **failed)

    def claim(self, dialect: str) -> ReturningUpdate[Any]:
        """Stamp a lease on up to :n due rows, in `order`, returning them (in no order)."""
        return self._claim["postgresql" if dialect == "postgresql" else "sqlite"]

    def redrive(self, *where: ColumnElement[bool]) -> Update:
        """Make the dead rows (that match `where`) due again at :now, attempts from zero."""
        return (
            update(self.table)
            .where(self.dead, *where)
            .values(
                status=self._ready,
                attempts=0,
                available_at=bindparam("now"),
                claimed_by=None,
                claimed_until=None,
            )
        )
