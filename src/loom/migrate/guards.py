"""Checks that generated revision scripts run before a step that would otherwise change stored
data silently (they import this module: `from loom.migrate import guards`).

PostgreSQL's `ALTER COLUMN … TYPE numeric(P, S)` rounds every stored value to the new scale
without a word, and on SQLite the rebuilt table keeps a value the new type refuses at its next
save (a string longer than a new `string(N)` too; PostgreSQL refuses it mid-migration, naming
no row). Neither is what a user asked for: the revision stops first, naming the values."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import sqlalchemy as sa
from alembic import op

from loom.runtime import decimals

_SHOWN = 3


def decimals_fit(table: str, column: str, precision: int, scale: int) -> None:
    """Refuse (RuntimeError, so the revision rolls back) when a stored value of `table.column` is
    not a `decimal(precision, scale)`: more digits after the point or before it."""
    query = sa.text(f'SELECT CAST("{column}" AS TEXT) FROM "{table}" WHERE "{column}" IS NOT NULL')
    misfits: list[str] = []
    count = 0
    for (text,) in op.get_bind().execute(query):
        try:
            problem = decimals.scale_error(Decimal(text), precision, scale)
        except InvalidOperation:
            problem = "not a number"
        if problem is not None:
            count += 1
            if len(misfits) < _SHOWN:
                misfits.append(str(text))
    if count:
        shown = ", ".join(misfits) + (", …" if count > len(misfits) else "")
        raise RuntimeError(
            f"{table}.{column} becomes decimal({precision}, {scale}), but {count} stored "
            f"value(s) do not fit it ({shown}) and would be rounded or refused: change them "
            "first (e.g. round them to the new scale through the service), or keep a type "
            "that holds them"
        )


def strings_fit(table: str, column: str, length: int) -> None:
    """Refuse (RuntimeError, so the revision rolls back) when a stored value of `table.column` is
    longer than `length` characters (SQL's `length` counts characters on both engines, as
    `string(N)` does)."""
    where = f'FROM "{table}" WHERE length("{column}") > {int(length)}'
    count = op.get_bind().execute(sa.text(f"SELECT count(*) {where}")).scalar_one()
    if not count:
        return
    query = sa.text(f'SELECT "{column}" {where} ORDER BY "{column}" LIMIT {_SHOWN}')
    shown = [_clip(str(v)) for (v,) in op.get_bind().execute(query)]
    more = ", …" if count > len(shown) else ""
    raise RuntimeError(
        f"{table}.{column} becomes string({length}), but {count} stored value(s) are longer "
        f"({', '.join(shown)}{more}): shorten them first (through the service), or keep a "
        "length that holds them"
    )


def _clip(text: str) -> str:
    """A stored value as the refusal shows it: quoted, its first 40 characters."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


def members_only(table: str, column: str, members: list[str]) -> None:
    """Refuse (RuntimeError, so the revision rolls back) when a row of `table.column` holds a
    value outside the enum's `members`: a member removed from the model that rows still hold,
    which every read of them would fail on."""
    col: sa.ColumnClause[str] = sa.column(column)
    query = (
        sa.select(col, sa.func.count())
        .select_from(sa.table(table))
        .where(col.is_not(None), col.not_in(members))
        .group_by(col)
        .order_by(col)
    )
    held = [(str(v), int(n)) for v, n in op.get_bind().execute(query)]
    if held:
        shown = ", ".join(f"'{v}' ({n} row(s))" for v, n in held[:_SHOWN])
        raise RuntimeError(
            f"{table}.{column} may hold only {', '.join(members)} now, but rows hold {shown}: "
            "rewrite them to a member (`loom migrate new ... --rewrite 'Enum.Old -> New'`, or "
            "`New renamed from Old` in the enum) or change them through the service first "
            "(docs/migrations.md#removing-an-enum-member)"
        )
