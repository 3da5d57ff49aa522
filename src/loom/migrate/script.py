"""A migration's Alembic revision script: readable, formatted as ruff formats it, deterministic.

The plan in words is its docstring. Column changes go through `op.batch_alter_table`, so SQLite
(whose ALTER TABLE cannot change a column) gets Alembic's copy-and-move, and PostgreSQL plain
ALTERs. A new required column gets the model's constant default as its server default, so the
existing rows (and the previous code's inserts, during a rolling deploy) have it; values are
written by SQLAlchemy through the column's own type (UPDATE statements for enum rewrites and for
a column made required).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from loom.migrate.snapshot import ColumnSnap, TableSnap, numeric_of
from loom.migrate.steps import (
    AddColumn,
    AddIndex,
    AddUnique,
    AlterColumn,
    AlterPrimaryKey,
    ContractRename,
    CreateTable,
    DropColumn,
    DropIndex,
    DropTable,
    DropUnique,
    ExpandRename,
    RenameColumn,
    RenameTable,
    RetireEnum,
    RewriteEnum,
    Step,
    constant_default,
    has_default,
    is_tenant_column,
    is_widening,
)

__all__ = ["render_script"]

WIDTH = 100
# neutral type -> how the script spells it (Loom's own column types keep their engine mapping)
_TYPES = {
    "String": "sa.String",
    "Text": "sa.Text",
    "BigInteger": "sa.BigInteger",
    "Integer": "sa.Integer",
    "Boolean": "sa.Boolean",
    "Date": "sa.Date",
    "Uuid": "sa.Uuid",
    "LargeBinary": "sa.LargeBinary",
    "Decimal": "types.DecimalText",
    "DateTime": "types.UtcDateTime",
    "Json": "types.JsonList",
}
# PostgreSQL's name of each type, for the USING clause of a type change
_PG_TYPES = {
    "String": "varchar",
    "Text": "text",
    "BigInteger": "bigint",
    "Integer": "integer",
    "Boolean": "boolean",
    "Date": "date",
    "Uuid": "uuid",
    "LargeBinary": "bytea",
    "Decimal": "numeric",
    "DateTime": "timestamptz",
    "Json": "jsonb",
}


def _q(text: str) -> str:
    """A Python string literal quoted as ruff formats it: double quotes, unless the text holds
    a double quote and no single one."""
    if '"' in text and "'" not in text and "\\" not in text:
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True)
class _Call:
    """A call in the script, laid out by `_lay`."""

    name: str
    args: tuple[_Arg, ...]

    def flat(self) -> str:
        return f"{self.name}({', '.join(_flat(a) for a in self.args)})"


_Arg: TypeAlias = str | _Call


def _flat(arg: _Arg) -> str:
    return arg if isinstance(arg, str) else arg.flat()


def _lay(arg: _Arg, indent: int, trailing: str = "") -> list[str]:
    """`arg` laid out as ruff formats it: on one line when it fits, else a call's arguments on
    one line of their own when that fits, else one argument per line (each laid out in turn)."""
    pad, inner = " " * indent, " " * (indent + 4)
    one = f"{pad}{_flat(arg)}{trailing}"
    if len(one) <= WIDTH or isinstance(arg, str):
        return [one]
    hugged = f"{inner}{', '.join(_flat(a) for a in arg.args)}"
    if len(hugged) <= WIDTH:
        return [f"{pad}{arg.name}(", hugged, f"{pad}){trailing}"]
    lines = [f"{pad}{arg.name}("]
    for a in arg.args:
        lines += _lay(a, indent + 4, ",")
    return [*lines, f"{pad}){trailing}"]


def _call(name: str, args: Sequence[_Arg], indent: int) -> list[str]:
    return _lay(_Call(name, tuple(args)), indent)


def _type(column: ColumnSnap) -> str:
    spelled = _TYPES[column["type"]]
    bound = numeric_of(column)
    if bound is not None:
        return f"{spelled}({bound[0]}, {bound[1]})"
    return f"{spelled}({column['length']})" if column["length"] is not None else f"{spelled}()"


def _literal(value: Any) -> str:
    """A Python literal of a JSON value (SQLAlchemy binds it through the column's type)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _q(value)
    return repr(value)


def _server_default(column: ColumnSnap) -> str:
    """The constant default as a server default, in SQL every engine reads the same way."""
    value = constant_default(column)
    if isinstance(value, bool):
        return "sa.true()" if value else "sa.false()"
    if isinstance(value, int | float):
        return f"sa.text({_q(repr(value))})"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"sa.text({_q(chr(39) + text.replace(chr(39), chr(39) * 2) + chr(39))})"


def _column(column: ColumnSnap, *, server_default: bool = False, in_table: bool = False) -> _Call:
    args = [_q(column["name"]), _type(column)]
    if column["primary_key"] and in_table:
        args.append("primary_key=True")
    args.append(f"nullable={column['nullable']}")
    # a null default is no server default: NULL is what an added nullable column holds anyway
    if server_default and has_default(column) and constant_default(column) is not None:
        args.append(f"server_default={_server_default(column)}")
    return _Call("sa.Column", tuple(args))


def _create(step: CreateTable) -> list[str]:
    snap: TableSnap = step.snap
    pk = [c["name"] for c in snap["columns"] if c["primary_key"]]
    named_pk = snap["primary_key_name"]
    args: list[_Arg] = [_q(step.table)]
    args += [_column(c, in_table=not named_pk) for c in snap["columns"]]
    if named_pk:
        args.append(f"sa.PrimaryKeyConstraint({', '.join(map(_q, pk))}, name={_q(named_pk)})")
    args += [
        f"sa.UniqueConstraint({', '.join(map(_q, u['columns']))}, name={_q(u['name'])})"
        for u in snap["unique"]
    ]
    lines = _call("op.create_table", args, 4)
    for index in snap["indexes"]:
        lines += _index(step.table, index["name"], index["columns"], index["unique"])
    return lines


def _index(table: str, name: str, columns: list[str], unique: bool) -> list[str]:
    cols = "[" + ", ".join(map(_q, columns)) + "]"
    return _call("op.create_index", [_q(name), _q(table), cols, f"unique={unique}"], 4)


def _table_var(table: str, columns: list[ColumnSnap]) -> str:
    return _one_line(
        "sa.table", [_q(table), *(f"sa.column({_q(c['name'])}, {_type(c)})" for c in columns)]
    )


def _one_line(name: str, args: Sequence[str]) -> str:
    return f"{name}({', '.join(args)})"


def _batch(step: Step) -> list[str]:
    """The lines of a column step inside `with op.batch_alter_table(...) as batch:`."""
    at = 8
    if isinstance(step, AddColumn):
        return _call("batch.add_column", [_column(step.column, server_default=True)], at)
    if isinstance(step, DropColumn):
        return _call("batch.drop_column", [_q(step.column["name"])], at)
    if isinstance(step, RenameColumn):
        return _call(
            "batch.alter_column", [_q(step.old), f"new_column_name={_q(step.column['name'])}"], at
        )
    if isinstance(step, AlterColumn):
        args = [_q(step.new["name"]), f"existing_type={_type(step.old)}"]
        if step.type_changed:
            args.append(f"type_={_type(step.new)}")
            pg = _PG_TYPES[step.new["type"]]
            if step.new["length"] is not None:
                pg += f"({step.new['length']})"
            bound = numeric_of(step.new)
            if bound is not None:
                pg += f"({bound[0]},{bound[1]})"
            using = f'"{step.new["name"]}"::{pg}'
            args.append(f"postgresql_using={_q(using)}")
        if step.nullable_changed:
            args.append(f"nullable={step.new['nullable']}")
        else:
            args.append(f"existing_nullable={step.new['nullable']}")
        return _call("batch.alter_column", args, at)
    if isinstance(step, AddUnique):
        cols = "[" + ", ".join(map(_q, step.unique["columns"])) + "]"
        return _call("batch.create_unique_constraint", [_q(step.unique["name"]), cols], at)
    if isinstance(step, DropUnique):
        return _call("batch.drop_constraint", [_q(step.unique["name"]), 'type_="unique"'], at)
    raise TypeError(f"not a column step: {step!r}")


def _backfill(step: AlterColumn) -> list[str]:
    """Before a column is made required: its empty values get the model's default."""
    col = step.new["name"]
    lines = [f"    t = {_table_var(step.table, [step.old])}"]
    value = _literal(constant_default(step.new))
    lines += _call(
        "op.execute",
        [f"t.update().where(t.c[{_q(col)}].is_(None)).values({{{_q(col)}: {value}}})"],
        4,
    )
    return lines


def _retire(step: RetireEnum) -> list[str]:
    """The rows of the retired members `--rewrite` names get their new member; then no row may
    hold a value outside the members (`guards.members_only`)."""
    lines = _rewrite(step.table, step.column, step.rewrites) if step.rewrites else []
    members = "[" + ", ".join(_q(str(m)) for m in step.column["info"]["members"]) + "]"
    return lines + _call(
        "guards.members_only", [_q(step.table), _q(step.column["name"]), members], 4
    )


def _rewrite(table: str, column: ColumnSnap, renames: Sequence[tuple[str, str]]) -> list[str]:
    col = column["name"]
    lines = [f"    t = {_table_var(table, [column])}"]
    for old, new in renames:
        lines += _call(
            "op.execute",
            [f"t.update().where(t.c[{_q(col)}] == {_q(old)}).values({{{_q(col)}: {_q(new)}}})"],
            4,
        )
    return lines


# the triggers of an expand are PostgreSQL's: SQLite's cannot fill a column of the row an insert
# is writing (they run after its NOT NULL checks)
_POSTGRESQL_ONLY = [
    '    if op.get_bind().dialect.name != "postgresql":',
    "        raise RuntimeError(",
    '            "an expand/contract migration (a rolling deploy) needs PostgreSQL; on SQLite, stop "',
    '            "the service and write the rename as one migration (without --expand)"',
    "        )",
]


def _sync_sql(step: ExpandRename) -> tuple[str, str]:
    """The function and the trigger keeping both columns of an expanded rename in step: an
    insert that leaves one out gets the other's value; an update of one is copied to the other."""
    t, a, b, f = (
        f'"{x}"' for x in (step.table, step.old["name"], step.column["name"], step.trigger)
    )
    function = f"""
        CREATE FUNCTION {f}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                IF NEW.{b} IS NULL THEN NEW.{b} := NEW.{a}; END IF;
                IF NEW.{a} IS NULL THEN NEW.{a} := NEW.{b}; END IF;
            ELSIF NEW.{b} IS DISTINCT FROM OLD.{b} THEN
                NEW.{a} := NEW.{b};
            ELSIF NEW.{a} IS DISTINCT FROM OLD.{a} THEN
                NEW.{b} := NEW.{a};
            END IF;
            RETURN NEW;
        END
        $$
        """
    trigger = f"""
        CREATE TRIGGER {f} BEFORE INSERT OR UPDATE ON {t}
            FOR EACH ROW EXECUTE FUNCTION {f}()
        """
    return function, trigger


def _expand(step: ExpandRename) -> list[str]:
    """Add the new column (optional while it is filled), fill it from the old one, give it the
    model's nullability, make the old one optional without a server default (so that the
    trigger sees the inserts that leave it out), then the trigger."""
    old, new = step.old, step.column
    lines = [f"    with op.batch_alter_table({_q(step.table)}) as batch:"]
    lines += _call("batch.add_column", [_column({**new, "nullable": True})], 8)
    lines += _call(
        "t = sa.table",
        [_q(step.table), *(f"sa.column({_q(c['name'])}, {_type(c)})" for c in (old, new))],
        4,
    )
    lines += _call(
        "op.execute", [f"t.update().values({{{_q(new['name'])}: t.c[{_q(old['name'])}]}})"], 4
    )
    lines.append(f"    with op.batch_alter_table({_q(step.table)}) as batch:")
    if not new["nullable"]:
        lines += _call(
            "batch.alter_column",
            [_q(new["name"]), f"existing_type={_type(new)}", "nullable=False"],
            8,
        )
    lines += _call(
        "batch.alter_column",
        [_q(old["name"]), f"existing_type={_type(old)}", "nullable=True", "server_default=None"],
        8,
    )
    for sql in _sync_sql(step):
        lines += ["    op.execute(", f'        """{sql}"""', "    )"]
    return lines


def _contract(step: ContractRename) -> list[str]:
    lines = _call("op.execute", [_q(f'DROP TRIGGER "{step.trigger}" ON "{step.table}"')], 4)
    lines += _call("op.execute", [_q(f'DROP FUNCTION "{step.trigger}"()')], 4)
    lines.append(f"    with op.batch_alter_table({_q(step.table)}) as batch:")
    return lines + _call("batch.drop_column", [_q(step.old)], 8)


_BATCHED = (AddColumn, DropColumn, RenameColumn, AlterColumn, AddUnique, DropUnique)


def _body(steps: Sequence[Step]) -> list[str]:
    lines: list[str] = []
    i = 0
    while i < len(steps):
        step = steps[i]
        if isinstance(step, _BATCHED):
            group = []
            while (
                i < len(steps) and isinstance(steps[i], _BATCHED) and steps[i].table == step.table
            ):
                if isinstance(steps[i], AlterColumn) and _needs_backfill(steps[i]):
                    break
                group.append(steps[i])
                i += 1
            if not group:  # an alter that needs its backfill first
                assert isinstance(step, AlterColumn)
                lines += _backfill(step)
                lines.append(f"    with op.batch_alter_table({_q(step.table)}) as batch:")
                lines += _batch(step)
                i += 1
                continue
            tenanted = any(isinstance(s, AddColumn) and is_tenant_column(s.column) for s in group)
            if tenanted:
                lines += _empty_or_refuse(step.table)
            for s in group:
                lines += _values_fit(s)
            # SQLite adds a required column without a default only to a table it rebuilds
            how = ', recreate="always"' if tenanted else ""
            lines.append(f"    with op.batch_alter_table({_q(step.table)}{how}) as batch:")
            for s in group:
                lines += _batch(s)
            continue
        if isinstance(step, CreateTable):
            lines += _create(step)
        elif isinstance(step, DropTable):
            lines += _call("op.drop_table", [_q(step.table)], 4)
        elif isinstance(step, RenameTable):
            lines += _call("op.rename_table", [_q(step.old), _q(step.table)], 4)
        elif isinstance(step, AddIndex):
            lines += _index(
                step.table, step.index["name"], step.index["columns"], step.index["unique"]
            )
        elif isinstance(step, DropIndex):
            lines += _call(
                "op.drop_index", [_q(step.index["name"]), f"table_name={_q(step.table)}"], 4
            )
        elif isinstance(step, RewriteEnum):
            lines += _rewrite(step.table, step.column, step.renames)
        elif isinstance(step, RetireEnum):
            lines += _retire(step)
        elif isinstance(step, AlterPrimaryKey):
            lines += _primary_key(step)
        elif isinstance(step, ExpandRename):
            lines += _expand(step)
        elif isinstance(step, ContractRename):
            lines += _contract(step)
        else:  # pragma: no cover - every step kind is rendered above
            raise TypeError(f"no rendering for {step!r}")
        i += 1
    if any(isinstance(s, ExpandRename | ContractRename) for s in steps):
        lines = _POSTGRESQL_ONLY + lines
    return lines or ["    pass"]


def _primary_key(step: AlterPrimaryKey) -> list[str]:
    """A new primary key: PostgreSQL drops the old constraint and adds the new one; SQLite
    changes a key only by rebuilding the table (Alembic's copy-and-move keeps the rows)."""
    table = _q(step.table)
    default = f"{step.table}_pkey"[:63]  # PostgreSQL's name of an unnamed key
    old, new = _q(step.old_name or default), _q(step.new_name or default)
    cols = "[" + ", ".join(map(_q, step.new)) + "]"
    lines = ['    if op.get_bind().dialect.name == "postgresql":']
    lines += _call("op.drop_constraint", [old, table, 'type_="primary"'], 8)
    lines += _call("op.create_primary_key", [new, table, cols], 8)
    lines.append("    else:")
    # the copied columns still flag the old key: SQLAlchemy warns, then keys the copy by the new
    lines.append("        with warnings.catch_warnings():")
    lines.append('            warnings.simplefilter("ignore", sa.exc.SAWarning)')
    lines.append(f'            with op.batch_alter_table({table}, recreate="always") as batch:')
    lines += _call("batch.create_primary_key", [new, cols], 16)
    return lines


def _empty_or_refuse(table: str) -> list[str]:
    """Before a table gets its tenant column: its rows would have no tenant, and none can be
    invented, so the migration applies to an empty table only (docs/migrations.md)."""
    query = _q(f'SELECT 1 FROM "{table}" LIMIT 1')
    return [
        f"    query = sa.text({query})",
        "    row = op.get_bind().execute(query).first()",
        "    if row is not None:",
        "        raise RuntimeError(",
        f"            {_q(f'{table} becomes tenanted and has rows, which have no tenant: ')}",
        '            "copy them out, apply to the emptied table, and write them back through the "',
        '            "service as each tenant"',
        "        )",
    ]


def _values_fit(step: Step) -> list[str]:
    """Before a column becomes a narrower `decimal(P, S)` or `string(N)`: PostgreSQL would round
    its stored decimals to the new scale or refuse a longer string mid-way (and SQLite keep values
    the type then refuses at their next save), so the revision checks them first."""
    if not isinstance(step, AlterColumn) or not step.type_changed:
        return []
    if is_widening(step.old, step.new):
        return []
    bound, length = numeric_of(step.new), step.new["length"]
    if bound is not None:
        args = [_q(step.table), _q(step.new["name"]), str(bound[0]), str(bound[1])]
        return _call("guards.decimals_fit", args, 4)
    if step.new["type"] == "String" and length is not None:
        args = [_q(step.table), _q(step.new["name"]), str(length)]
        return _call("guards.strings_fit", args, 4)
    return []


def _needs_backfill(step: Step) -> bool:
    return (
        isinstance(step, AlterColumn)
        and step.nullable_changed
        and not step.new["nullable"]
        and has_default(step.new)
    )


# the loom modules a revision may call, imported only when its body does
_LOOM_MODULES = (("migrate", "guards"), ("runtime", "types"))


def render_script(
    revision: str,
    down_revision: str | None,
    message: str,
    plan: Sequence[str],
    steps: Sequence[Step],
) -> str:
    """The text of the revision script."""
    doc = [
        message,
        "",
        f"Revision {revision}" + (f", after {down_revision}." if down_revision else ", the first."),
    ]
    doc += ["Written by `loom migrate new` from the model; the plan:", ""]
    doc += [f"{n}. {line}" for n, line in enumerate(plan, start=1)] or ["(no steps)"]
    body = _body(steps)
    imports = ["import warnings", ""] if any("warnings." in line for line in body) else []
    if any("sa." in line for line in body):
        imports.append("import sqlalchemy as sa")
    imports.append("from alembic import op")
    loom_imports = [f"from loom.{package} import {module}" for package, module in _LOOM_MODULES]
    loom_imports = [
        line for line in loom_imports if any(line.rsplit(" ", 1)[1] + "." in b for b in body)
    ]
    if loom_imports:
        imports += ["", *loom_imports]
    text = [
        '"""' + doc[0].replace('"""', "'''"),
        *(line.replace('"""', "'''") for line in doc[1:]),
        '"""',
        "",
        *imports,
        "",
        f"revision = {_q(revision)}",
        f"down_revision = {_q(down_revision) if down_revision else 'None'}",
        "",
        "",
        "def upgrade() -> None:",
        *body,
        "",
    ]
    return "\n".join(text)
