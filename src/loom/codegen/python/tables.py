"""`<context>/tables.py`: one SQLAlchemy Core table per aggregate, on the package's one MetaData.

Table names are `<context_snake>_<plural_snake>` so two contexts never collide; columns are `id`,
`version`, then one per field in declaration order (snake_case).
"""

from __future__ import annotations

from loom.codegen.python import names
from loom.codegen.python._code import Imports, call, header, lay, module_text, py_str, where
from loom.codegen.python._shared import ModelInfo, column_name, context_module
from loom.model import ir


def table_var(agg: ir.Aggregate) -> str:
    """The module-level name of an aggregate's table: `accounts`."""
    return names.escape(names.plural_snake(agg.name))


def table_name(context: ir.Context, agg: ir.Aggregate) -> str:
    return f"{context_module(context).rstrip('_')}_{names.plural_snake(agg.name)}"


def _column_type(t: ir.Type, imports: Imports) -> str:
    if isinstance(t, ir.OptionalType):
        return _column_type(t.inner, imports)
    if isinstance(t, ir.ListType):
        imports.add("loom.runtime.types", "JsonList")
        return "JsonList"
    if isinstance(t, ir.IdType):
        imports.add("sqlalchemy", "Uuid")
        return "Uuid"
    if isinstance(t, ir.EnumType):
        imports.add("sqlalchemy", "String")
        return "String"
    if isinstance(t, ir.PrimitiveType):
        kind = {
            "string": ("sqlalchemy", "String"),
            "int": ("sqlalchemy", "BigInteger"),
            "bool": ("sqlalchemy", "Boolean"),
            "date": ("sqlalchemy", "Date"),
            "decimal": ("loom.runtime.types", "DecimalText"),
            "datetime": ("loom.runtime.types", "UtcDateTime"),
        }[t.name]
        imports.add(*kind)
        return kind[1]
    raise TypeError(f"a field cannot have type {t!r}")


def emit_tables(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    imports.add("sqlalchemy", "Column", "Integer", "Table", "Uuid")
    imports.add(".._metadata", "metadata")
    blocks: list[list[str]] = []
    for agg in context.aggregates:
        columns = [
            py_str(table_name(context, agg)),
            "metadata",
            'Column("id", Uuid, primary_key=True)',
            'Column("version", Integer, nullable=False)',
        ]
        for f in agg.fields:
            nullable = "True" if isinstance(f.type, ir.OptionalType) else "False"
            col_type = _column_type(f.type, imports)
            columns.append(
                f"Column({py_str(column_name(f.name))}, {col_type}, nullable={nullable})"
            )
        block = [f"# aggregate {agg.name} ({where(agg.origin)})"]
        block += lay(call("Table", columns, prefix=f"{table_var(agg)} = "))
        blocks.append(block)
    head = header(info.files_of(context), f"Tables of context {context.name}.")
    return module_text(head, imports, blocks)
