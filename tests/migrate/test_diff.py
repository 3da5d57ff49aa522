"""The diff of two schemas into steps, and the plan in words: renames only when the model says so,
defaults from the info, keys and enum rewrites."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table, UniqueConstraint, Uuid

from loom.migrate.diff import diff
from loom.migrate.tables import snapshot_of
from tests.migrate.kit import accounts, info, plan_between


def test_same_schema_is_no_step() -> None:
    assert diff(snapshot_of(accounts(2)), snapshot_of(accounts(2))) == []


def test_first_migration_creates_every_table() -> None:
    assert plan_between(None, accounts(3)).lines() == [
        "create table bank_accounts (10 columns)",
        "create table bank_loans (3 columns)",
    ]


def test_added_fields_with_their_defaults() -> None:
    plan = plan_between(accounts(1), accounts(2))
    assert plan.lines() == [
        "add column bank_accounts.nickname (String), default ''",
        "add column bank_accounts.limit_ (Decimal), default '0.00'",
        "add column bank_accounts.flags (Json), default []",
        "add column bank_accounts.vip (Boolean), default false",
        "add column bank_accounts.note (String, optional)",
    ]
    assert plan.findings == []
    assert plan.additive


def test_renames_said_in_the_model_keep_the_data() -> None:
    plan = plan_between(accounts(2), accounts(3))
    assert plan.lines() == [
        "create table bank_loans (3 columns)",
        "rename column bank_accounts.number to code (values kept)",
        "rewrite bank_accounts.kind: 'Basic' to 'Standard'",
    ]
    codes = [f.diagnostic.code for f in plan.findings]
    assert codes == ["loom.migrate-breaks-running-code"] * 2
    assert not plan.data_loss and not plan.errors


def test_renamed_table_and_dropped_column() -> None:
    plan = plan_between(accounts(3), accounts(4))
    assert plan.lines() == [
        "rename table bank_accounts to bank_wallets (its rows are kept)",
        "drop column bank_wallets.note (its values are lost)",
    ]
    assert [f.diagnostic.code for f in plan.data_loss] == ["loom.migrate-drops-data"]


def test_a_leftover_renamed_from_is_harmless() -> None:
    # after the migration that applied it, the old name is gone from the old snapshot too
    assert diff(snapshot_of(accounts(4)), snapshot_of(accounts(4))) == []


def _one(*cols: Column[object], unique: tuple[str, ...] = ()) -> MetaData:
    md = MetaData()
    extra = [UniqueConstraint(*unique, name="uq_t_" + "_".join(unique))] if unique else []
    Table("t", md, Column("id", Uuid, primary_key=True), *cols, *extra, info=info(origin="C.T"))
    return md


def test_drop_plus_add_of_one_shape_asks_for_renamed_from() -> None:
    old = _one(Column("name", String, nullable=False, info=info(field="name")))
    new = _one(Column("title", String, nullable=False, info=info(field="title", default="")))
    plan = plan_between(old, new)
    codes = {f.diagnostic.code for f in plan.findings}
    assert "loom.migrate-maybe-rename" in codes and "loom.migrate-drops-data" in codes
    hint = next(f for f in plan.findings if f.diagnostic.code == "loom.migrate-maybe-rename")
    assert "renamed from name" in (hint.diagnostic.help or "")


def test_required_without_default_is_an_error() -> None:
    old = _one()
    new = _one(Column("rank", BigInteger, nullable=False, info=info(field="rank")))
    plan = plan_between(old, new)
    assert [f.diagnostic.code for f in plan.errors] == ["loom.migrate-required-without-default"]
    expr = _one(Column("at", String, nullable=False, info=info(field="at", default_expr="now()")))
    message = plan_between(old, expr).errors[0].diagnostic.message
    assert "`now()` is not a constant" in message


def test_types_widen_or_lose_data() -> None:
    old = _one(Column("n", Integer, nullable=False), Column("s", String(10), nullable=False))
    wide = _one(Column("n", BigInteger, nullable=False), Column("s", String(20), nullable=False))
    plan = plan_between(old, wide)
    assert plan.lines() == [
        "change the type of t.n from Integer to BigInteger",
        "change the type of t.s from String(10) to String(20)",
    ]
    assert not plan.data_loss
    narrow = plan_between(wide, old)
    assert [f.diagnostic.code for f in narrow.data_loss] == ["loom.migrate-narrowing-type"] * 2


def test_optional_to_required_needs_a_default() -> None:
    old = _one(Column("a", String, nullable=True), Column("b", String, nullable=True))
    new = _one(
        Column("a", String, nullable=False, info=info(field="a", default="x")),
        Column("b", String, nullable=False, info=info(field="b")),
    )
    plan = plan_between(old, new)
    assert plan.lines() == [
        "make column t.a required, empty values set to 'x'",
        "make column t.b required",
    ]
    assert [f.step for f in plan.errors] == [1]
    assert plan_between(new, old).lines() == [
        "make column t.a optional",
        "make column t.b optional",
    ]


def test_unique_keys_over_existing_rows() -> None:
    old = _one(Column("a", String, nullable=False))
    existing = _one(Column("a", String, nullable=False), unique=("a",))
    plan = plan_between(old, existing)
    assert [f.diagnostic.code for f in plan.findings] == ["loom.migrate-unique-existing-rows"]
    assert "GROUP BY a HAVING count(*) > 1" in (plan.findings[0].diagnostic.help or "")
    fresh = _one(
        Column("a", String, nullable=False),
        Column("b", String, nullable=False, info=info(field="b", default="")),
        unique=("b",),
    )
    plan = plan_between(old, fresh)
    assert [f.diagnostic.code for f in plan.errors] == ["loom.migrate-unique-duplicates"]


def test_what_the_previous_code_survives() -> None:
    old = _one(Column("n", Integer, nullable=False), Column("s", String, nullable=True))
    widened = _one(Column("n", BigInteger, nullable=False), Column("s", String, nullable=True))
    assert [s.compatible for s in plan_between(old, widened).steps] == [True]
    required = _one(
        Column("n", Integer, nullable=False),
        Column("s", String, nullable=False, info=info(field="s", default="")),
    )
    plan = plan_between(old, required)
    assert [s.compatible for s in plan.steps] == [False]
    assert [f.diagnostic.code for f in plan.findings] == ["loom.migrate-breaks-running-code"]
    assert [s.compatible for s in plan_between(required, old).steps] == [True]
