"""`<context>/tables.py`: one SQLAlchemy Core table per aggregate, on the package's one MetaData.

Table names are `<context_snake>_<plural_snake>` so two contexts never collide; columns are `id`,
`version`, then one per field in declaration order (snake_case), then one UNIQUE constraint per
natural key (`unique (…)`), named `uq_<table>_<columns>`. A correlated workflow's instances live in
`<context_snake>_<workflow_snake>_instances`: the correlation field (primary key), `version`, then
one column per other state field; a projection's rows alike, keyed by its key. In a tenanted
context these are keyed by (`tenant`, key): two tenants may use one key.
"""

from __future__ import annotations

from loom.codegen.python.column_info import column_info, table_info
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import Keyed, instances_table_var, key_of, keyed, keyed_fields
from loom.codegen.python.layout import Doc, call, lay
from loom.codegen.python.literals import py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.wire import record_of
from loom.model import ir, naming, telemetry


def table_var(agg: ir.Aggregate) -> str:
    """The module-level name of an aggregate's table: `accounts`."""
    return naming.escape(naming.plural_snake(agg.name))


def table_name(context: ir.Context, agg: ir.Aggregate) -> str:
    return _table_name(context, agg.name)


def _table_name(context: ir.Context, aggregate: str) -> str:
    return f"{naming.context_module(context).rstrip('_')}_{naming.plural_snake(aggregate)}"


def _column_type(t: ir.Type, imports: Imports) -> str:
    if isinstance(t, ir.OptionalType):
        return _column_type(t.inner, imports)
    record = record_of(t)
    if record is not None:
        # a value object (or a list of them): JSON text, rebuilt into the domain dataclasses
        cls = naming.pascal(record.name)
        imports.add("loom.runtime.types", "JsonValue")
        imports.add(".domain", cls)
        return f"JsonValue({f'list[{cls}]' if isinstance(t, ir.ListType) else cls})"
    if isinstance(t, ir.ListType):
        imports.add("loom.runtime.types", "JsonList")
        return "JsonList"
    if isinstance(t, ir.IdType):
        imports.add("sqlalchemy", "Uuid")
        return "Uuid"
    if isinstance(t, ir.EnumType):
        imports.add("sqlalchemy", "String")
        return "String"
    if isinstance(t, ir.PrimitiveType) and t.max_length is not None:
        imports.add("loom.runtime.types", "BoundedText")
        return f"BoundedText({t.max_length})"
    if isinstance(t, ir.PrimitiveType) and t.precision is not None:
        imports.add("loom.runtime.types", "DecimalText")
        return f"DecimalText({t.precision}, {t.scale})"
    if isinstance(t, ir.PrimitiveType):
        kind = {
            "string": ("sqlalchemy", "String"),
            "int": ("sqlalchemy", "BigInteger"),
            "bool": ("sqlalchemy", "Boolean"),
            "date": ("sqlalchemy", "Date"),
            "decimal": ("loom.runtime.types", "DecimalText"),
            "datetime": ("loom.runtime.types", "UtcDateTime"),
            "duration": ("loom.runtime.times", "DurationMicros"),
        }[t.name]
        imports.add(*kind)
        return kind[1]
    raise TypeError(f"a field cannot have type {t!r}")


def _has_zero(f: ir.Field) -> bool:
    """Whether a state field always holds a value (else its column is nullable)."""
    if isinstance(f.type, ir.OptionalType):
        return False
    if f.default is not None or isinstance(f.type, ir.ListType):
        return True
    return isinstance(f.type, ir.PrimitiveType) and f.type.name in (
        "int",
        "string",
        "bool",
        "decimal",
    )


TENANT = "tenant"
_TENANT_INFO = 'info={"loom": {"tenant": True}}'
TRACE_COLUMN = (
    f"Column({py_str(telemetry.TRACE_CONTEXT_COLUMN)}, Text, nullable=True, "
    'info={"loom": {"trace": True}})'
)
STEPS_COLUMN = (
    f"Column({py_str(telemetry.STEPS_COLUMN)}, Text, nullable=True, "
    'info={"loom": {"steps": True}})'
)
TENANT_COLUMN = f'Column("{TENANT}", String, nullable=False, index=True, {_TENANT_INFO})'
# the first column of a keyed table's primary key (tenant, key)
TENANT_KEY_COLUMN = f'Column("{TENANT}", String, primary_key=True, {_TENANT_INFO})'


def emit_tables(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    blocks: list[list[str]] = []
    for agg in context.aggregates:
        _table_imports(imports)
        imports.add("sqlalchemy", "Uuid")
        columns: list[Doc] = [
            py_str(table_name(context, agg)),
            "metadata",
            'Column("id", Uuid, primary_key=True)',
            'Column("version", Integer, nullable=False)',
        ]
        if context.tenanted:
            # the row's tenant: no field, the repository writes and filters it
            imports.add("sqlalchemy", "String")
            columns.append(TENANT_COLUMN)
        for f in agg.fields:
            nullable = "True" if isinstance(f.type, ir.OptionalType) else "False"
            col_type = _column_type(f.type, imports)
            columns.append(_column(info, f, col_type, nullable))
        for unique in agg.unique:
            imports.add("sqlalchemy", "UniqueConstraint")
            cols = [py_str(naming.column_name(f)) for f in unique]
            if context.tenanted:  # a natural key is unique within its tenant
                cols.insert(0, py_str(TENANT))
            uq = f"uq_{table_name(context, agg)}_{'_'.join(naming.column_name(f) for f in unique)}"
            columns.append(call("UniqueConstraint", [*cols, f"name={py_str(uq[:63])}"]))
        old = _table_name(context, agg.renamed_from) if agg.renamed_from else None
        columns.append(table_info(f"{context.name}.{agg.name}", old, tenanted=context.tenanted))
        block = [f"# aggregate {agg.name} ({where(agg.origin)})"]
        block += lay(call("Table", columns, prefix=f"{table_var(agg)} = "))
        blocks.append(block)
    for wf in keyed(context):
        blocks.append(_instance_table(info, context, wf, imports))
    head = header(info.files_of(context), f"Tables of context {context.name}.")
    return module_text(head, imports, blocks)


def _table_imports(imports: Imports) -> None:
    """What every table needs; a context with no table (only enums, say) imports nothing."""
    imports.add("sqlalchemy", "Column", "Integer", "Table")
    imports.add(".._metadata", "metadata")


def _column(info: ModelInfo, f: ir.Field, col_type: str, nullable: str, zero: bool = False) -> Doc:
    name = py_str(naming.column_name(f.name))
    return call("Column", [name, col_type, f"nullable={nullable}", column_info(info, f, zero)])


def _instance_table(info: ModelInfo, context: ir.Context, wf: Keyed, imports: Imports) -> list[str]:
    """The instance rows of a correlated workflow, or the rows of a projection."""
    _table_imports(imports)
    fields = keyed_fields(wf)
    key = next(f for f in fields if f.name == key_of(wf))
    key_type = _column_type(key.type, imports)
    columns: list[Doc] = [
        py_str(f"{naming.context_module(context).rstrip('_')}_{instances_table_var(wf)}"),
        "metadata",
    ]
    if context.tenanted:  # keyed by (tenant, key): no field, the store writes and filters it
        imports.add("sqlalchemy", "String")
        columns.append(TENANT_KEY_COLUMN)
    columns += [
        call(
            "Column",
            [
                py_str(naming.column_name(key.name)),
                key_type,
                "primary_key=True",
                column_info(info, key),
            ],
        ),
        'Column("version", Integer, nullable=False)',
    ]
    if isinstance(wf, ir.Workflow):
        # the trace context of its last step (docs/observability.md#traces) and the journal of
        # its steps (docs/processes.md#instances-for-operators): no fields
        imports.add("sqlalchemy", "Text")
        columns += [TRACE_COLUMN, STEPS_COLUMN]
    for f in fields:
        if f.name == key.name:
            continue
        nullable = "True" if not _has_zero(f) else "False"
        col_type = _column_type(f.type, imports)
        columns.append(_column(info, f, col_type, nullable, zero=True))
    columns.append(table_info(f"{context.name}.{wf.name}", tenanted=context.tenanted))
    what = "instances of workflow" if isinstance(wf, ir.Workflow) else "rows of projection"
    block = [f"# {what} {wf.name} ({where(wf.origin)})"]
    block += lay(call("Table", columns, prefix=f"{instances_table_var(wf)} = "))
    return block
