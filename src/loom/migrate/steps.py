"""The steps of a migration, in the order they run, each able to say itself in words.

A step is compatible with the previous code of a rolling deploy when that code keeps working on
the schema after it (a new table, a new optional or defaulted column, a column made optional, a
widened type); a drop, a rename or any other change of a column it reads breaks it. A rename
written with `migrate new --expand` is an `ExpandRename` (compatible: the old column stays, kept in
step with the new one), and `--contract` later drops what it kept (`ContractRename`); see
`loom.migrate.rolling`.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from loom.migrate.snapshot import (
    ColumnSnap,
    IndexSnap,
    TableSnap,
    UniqueSnap,
    numeric_of,
    shape_of,
)

__all__ = [
    "TENANT_COLUMN",
    "AddColumn",
    "AddIndex",
    "AddUnique",
    "AlterColumn",
    "AlterPrimaryKey",
    "ContractRename",
    "CreateTable",
    "DropColumn",
    "DropIndex",
    "DropTable",
    "DropUnique",
    "ExpandRename",
    "RenameColumn",
    "RenameTable",
    "RetireEnum",
    "RewriteEnum",
    "Step",
    "constant_default",
    "is_tenant_column",
    "is_widening",
    "sync_trigger",
    "type_text",
]

_NO_DEFAULT = object()


def constant_default(column: ColumnSnap) -> Any:
    """The model's constant default of a column (from its info), or `_NO_DEFAULT`."""
    info = column["info"]
    return info.get("default", _NO_DEFAULT)


TENANT_COLUMN = "tenant"


def is_tenant_column(column: ColumnSnap) -> bool:
    """The `tenant` column of a tenanted context's table (the model's info marks it)."""
    return column["name"] == TENANT_COLUMN and column["info"].get("tenant") is True


def has_default(column: ColumnSnap) -> bool:
    return constant_default(column) is not _NO_DEFAULT


def type_text(column: ColumnSnap) -> str:
    length, bound = column["length"], numeric_of(column)
    if bound is not None:
        return f"{column['type']}({bound[0]}, {bound[1]})"
    return f"{column['type']}({length})" if length is not None else column["type"]


def is_widening(old: ColumnSnap, new: ColumnSnap) -> bool:
    """Whether every value of the old type is a value of the new one, unchanged."""
    a, b = old["type"], new["type"]
    if shape_of(old) == shape_of(new):
        return True
    if a == b == "Decimal":
        # a decimal(P, S) widens when neither side of the point loses a digit; a plain decimal
        # narrows to any decimal(P, S) (its stored values may have more digits)
        was, now = numeric_of(old), numeric_of(new)
        if now is None:
            return True
        return was is not None and now[1] >= was[1] and now[0] - now[1] >= was[0] - was[1]
    if (a, b) == ("Integer", "BigInteger"):
        return True
    if a == "String" and b in ("String", "Text"):
        la, lb = old["length"], new["length"]
        return b == "Text" or lb is None or (la is not None and lb >= la)
    return False


def _value(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value)


@dataclass(frozen=True)
class Step:
    table: str

    @property
    def compatible(self) -> bool:
        """Whether the previous code still works on the schema after this step."""
        return False

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class CreateTable(Step):
    snap: TableSnap

    @property
    def compatible(self) -> bool:
        return True

    def describe(self) -> str:
        return f"create table {self.table} ({len(self.snap['columns'])} columns)"


@dataclass(frozen=True)
class DropTable(Step):
    snap: TableSnap

    def describe(self) -> str:
        return f"drop table {self.table} (its rows are lost)"


@dataclass(frozen=True)
class RenameTable(Step):
    old: str

    def describe(self) -> str:
        return f"rename table {self.old} to {self.table} (its rows are kept)"


@dataclass(frozen=True)
class AddColumn(Step):
    column: ColumnSnap
    # a new column of a new table in this migration never meets existing rows
    existing_rows: bool = True

    @property
    def compatible(self) -> bool:
        return self.column["nullable"] or has_default(self.column)

    def describe(self) -> str:
        c = self.column
        where = f"{self.table}.{c['name']}"
        if c["nullable"]:
            return f"add column {where} ({type_text(c)}, optional)"
        if has_default(c):
            return f"add column {where} ({type_text(c)}), default {_value(constant_default(c))}"
        return f"add column {where} ({type_text(c)}, required, no constant default)"


@dataclass(frozen=True)
class DropColumn(Step):
    column: ColumnSnap

    def describe(self) -> str:
        return f"drop column {self.table}.{self.column['name']} (its values are lost)"


@dataclass(frozen=True)
class RenameColumn(Step):
    old: str
    column: ColumnSnap
    before: ColumnSnap  # the old column, as the old schema has it

    def describe(self) -> str:
        return f"rename column {self.table}.{self.old} to {self.column['name']} (values kept)"


@dataclass(frozen=True)
class AlterColumn(Step):
    """A change of nullability, of type, or both, of one column."""

    old: ColumnSnap
    new: ColumnSnap

    @property
    def type_changed(self) -> bool:
        return shape_of(self.old) != shape_of(self.new)

    @property
    def nullable_changed(self) -> bool:
        return self.old["nullable"] != self.new["nullable"]

    @property
    def compatible(self) -> bool:
        """A widened type, or a column made optional: the previous code reads and writes it as
        before. Any other type change, or a column made required (the previous code may write
        no value), is not."""
        made_required = self.nullable_changed and not self.new["nullable"]
        return (not self.type_changed or is_widening(self.old, self.new)) and not made_required

    def describe(self) -> str:
        where = f"{self.table}.{self.new['name']}"
        parts = []
        if self.type_changed:
            parts.append(
                f"change the type of {where} from {type_text(self.old)} to {type_text(self.new)}"
            )
        if self.nullable_changed and self.new["nullable"]:
            parts.append(f"make column {where} optional")
        elif self.nullable_changed:
            text = f"make column {where} required"
            if has_default(self.new):
                text += f", empty values set to {_value(constant_default(self.new))}"
            parts.append(text)
        return "; ".join(parts)


@dataclass(frozen=True)
class AddUnique(Step):
    unique: UniqueSnap
    # its columns added in this same migration (every existing row then holds one value)
    new_columns: frozenset[str] = field(default_factory=frozenset)

    @property
    def compatible(self) -> bool:
        return True

    def describe(self) -> str:
        return f"add unique key {self.unique['name']} on {self.table} ({', '.join(self.unique['columns'])})"


@dataclass(frozen=True)
class AlterPrimaryKey(Step):
    """The primary key's columns changed (a table keyed per tenant: (tenant, key) for key).
    `old_name` / `new_name`: the key's names, None when unnamed (PostgreSQL's `<table>_pkey`)."""

    old: tuple[str, ...]
    new: tuple[str, ...]
    old_name: str | None = None
    new_name: str | None = None

    @property
    def compatible(self) -> bool:
        # a key widened by columns: every row the previous code writes is still unique
        return set(self.old) <= set(self.new)

    def describe(self) -> str:
        return (
            f"change the primary key of {self.table} from ({', '.join(self.old)}) to "
            f"({', '.join(self.new)})"
        )


@dataclass(frozen=True)
class DropUnique(Step):
    unique: UniqueSnap

    @property
    def compatible(self) -> bool:
        return True

    def describe(self) -> str:
        return f"drop unique key {self.unique['name']} on {self.table}"


@dataclass(frozen=True)
class AddIndex(Step):
    index: IndexSnap

    @property
    def compatible(self) -> bool:
        return True

    def describe(self) -> str:
        return (
            f"add index {self.index['name']} on {self.table} ({', '.join(self.index['columns'])})"
        )


@dataclass(frozen=True)
class DropIndex(Step):
    index: IndexSnap

    @property
    def compatible(self) -> bool:
        return True

    def describe(self) -> str:
        return f"drop index {self.index['name']} on {self.table}"


@dataclass(frozen=True)
class RewriteEnum(Step):
    """Stored enum values renamed in the model (`renamed from` on an enum member)."""

    column: ColumnSnap
    renames: tuple[tuple[str, str], ...]

    def describe(self) -> str:
        pairs = ", ".join(f"{_value(a)} to {_value(b)}" for a, b in self.renames)
        return f"rewrite {self.table}.{self.column['name']}: {pairs}"


@dataclass(frozen=True)
class RetireEnum(Step):
    """Enum members the model no longer has (removed, not renamed), that stored rows may still
    hold: the values `rewrites` names are rewritten to a member (`migrate new --rewrite`), and the
    revision then refuses to apply while a row holds a value outside the column's members
    (`guards.members_only`), rather than leave rows every read of them fails on."""

    column: ColumnSnap
    removed: tuple[str, ...]
    rewrites: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        where = f"{self.table}.{self.column['name']}"
        rewritten = dict(self.rewrites)
        said = [
            f"{_value(v)} rewritten to {_value(rewritten[v])}"
            if v in rewritten
            else f"{_value(v)} refused while a row holds it"
            for v in self.removed
        ]
        return f"retire enum member(s) of {where}: {', '.join(said)}"


def sync_trigger(table: str, column: str) -> str:
    """The name of the trigger (and of its function) that keeps an expanded rename's two columns
    in step: at most 63 characters, PostgreSQL's limit."""
    name = f"loom_sync_{table}_{column}"
    return name if len(name) <= 63 else name[:54] + format(zlib.crc32(name.encode()), "08x")


@dataclass(frozen=True)
class ExpandRename(Step):
    """The expand half of a column rename (`migrate new --expand`): the new column is added beside
    the old one, filled from it, and a trigger keeps the two in step while the previous code
    (which reads and writes the old one) and the new code run together. The old column is kept,
    made optional (the new code's inserts leave it out; the trigger fills it)."""

    old: ColumnSnap
    column: ColumnSnap

    @property
    def compatible(self) -> bool:
        return True

    @property
    def trigger(self) -> str:
        return sync_trigger(self.table, self.column["name"])

    def describe(self) -> str:
        return (
            f"expand the rename of {self.table}.{self.old['name']} to {self.column['name']}: "
            "the new column beside the old, filled from it, kept in step until the contract"
        )


@dataclass(frozen=True)
class ContractRename(Step):
    """The contract half (`migrate new --contract`): the old column an expand kept, and the
    trigger that kept it in step, are dropped; its values are already in the new column."""

    old: str
    new: str
    revision: str  # the expand's

    @property
    def compatible(self) -> bool:
        # the previous code is the expand's new code, which never reads the old column
        return True

    @property
    def trigger(self) -> str:
        return sync_trigger(self.table, self.new)

    def describe(self) -> str:
        return (
            f"contract: drop column {self.table}.{self.old}, kept by the expand {self.revision} "
            f"(its values are in {self.new})"
        )
