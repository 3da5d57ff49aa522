"""`<context>/repositories.py`: one repository class per aggregate (the runtime does the work), and
the context's criteria as where-clause builders.

An aggregate without a declared repository still gets one, named `<Aggregate>Repository`, for its
routes. Each repository also gets, as typed async methods:

- per natural key `unique (code)`: `find_by_code(code) -> A | None`, `get_by_code(code) -> A` (404);
- per criterion `C` of its aggregate: `find_by_c(...) -> A | None` (first by id), `find_all_by_c(...)`;
- per retrieval `R`: `run_r(...) -> list[A]`;
- per declared find `byX`: `find_by_x` (optional), `get_by_x` (must exist) or `find_all_by_x` (list).

Every one is a single SELECT whose where-clause is built from the arguments: the database filters.
"""

from __future__ import annotations

from collections.abc import Sequence

from loom.codegen.python.criteria import SqlRenderer, key_condition
from loom.codegen.python.expressions import Scope, render_as
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import (
    instances_class,
    instances_table_var,
    key_of,
    keyed,
    process_name,
    state_class,
)
from loom.codegen.python.layout import Doc, Group, lay
from loom.codegen.python.literals import docstring, py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.tables import table_var
from loom.codegen.python.type_names import TypeNames
from loom.model import ir, naming


def key_method(prefix: str, fields: tuple[str, ...]) -> str:
    return f"{prefix}_by_" + "_and_".join(naming.snake(f) for f in fields)


def criterion_function(name: str) -> str:
    return naming.escape(naming.snake(name))


def find_method(find: ir.RepositoryFind) -> str:
    prefix = {"one": "get", "optional": "find", "many": "find_all"}[find.cardinality]
    return f"{prefix}_{naming.snake(find.name)}"


def read_method(read: ir.Read) -> str:
    """The repository method a body read calls."""
    if read.kind == "by_id":
        return "get_by_id" if read.cardinality == "one" else "find_by_id"
    if read.kind == "by_key":
        return key_method("get" if read.cardinality == "one" else "find", read.key)
    if read.kind == "criterion":
        assert read.target is not None
        base = naming.snake(read.target)
        return f"find_all_by_{base}" if read.cardinality == "many" else f"find_by_{base}"
    if read.kind == "retrieval":
        assert read.target is not None
        return f"run_{naming.snake(read.target)}"
    prefix = {"one": "get", "optional": "find", "many": "find_all"}[read.cardinality]
    return f"{prefix}_{naming.snake(read.target or '')}"


def read_params(context: ir.Context, read: ir.Read) -> list[tuple[str, ir.Type]]:
    """The parameters (model name, type) of the method `read_method(read)` names, in order."""
    agg = context.aggregate(read.aggregate)
    fields = {f.name: f.type for f in agg.fields}
    if read.kind == "by_id":
        return [("id", ir.IdType(agg.name, agg.context))]
    if read.kind == "by_key":
        return [(f, fields[f]) for f in read.key]
    assert read.target is not None  # every other read names its criterion, retrieval or find
    if read.kind == "criterion":
        crit = context.criterion(read.target)
        return [(p.name, p.type) for p in crit.params]
    if read.kind == "retrieval":
        ret = context.retrieval(read.target)
        return [(p.name, p.type) for p in ret.params]
    repo = context.repository(read.repository)
    find = next(f for f in repo.finds if f.name == read.target)
    return [(p.name, p.type) for p in find.params]


def emit_repositories(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    types = TypeNames(info, context, imports, mode="domain")
    blocks: list[list[str]] = []
    if context.aggregates:
        imports.add("loom.runtime", "Repository")
        imports.add(".", "tables")
    for crit in context.criteria:
        blocks.append(_criterion(context, crit, types, imports))
    for proj in context.projections:
        if proj.filter is not None:
            blocks.append(_projection_rule(proj, types, imports))
    for agg in context.aggregates:
        blocks.append(_repository(info, context, agg, types, imports))
    for wf in keyed(context):
        process: list[str] = []
        if isinstance(wf, ir.Workflow) and wf.process:  # its instances run episodes
            imports.add("loom.runtime", "ProcessInstances")
            base, what = "ProcessInstances", "instances of workflow"
            process = [f"    process = {py_str(process_name(wf))}"]
        elif isinstance(wf, ir.Workflow):
            imports.add("loom.runtime", "Instances")
            base, what = "Instances", "instances of workflow"
        else:
            imports.add("loom.runtime", "Rows")
            base, what = "Rows", "rows of projection"
            if wf.filter is not None:  # its read rule, applied by the GET routes
                imports.add("types", "MappingProxyType")
                rule = f'{{"filter": {projection_rule_function(wf)}}}'
                process = [f"    filters = MappingProxyType({rule})"]
        imports.add(".", "tables")
        imports.add(".domain", state_class(wf))
        blocks.append(
            [
                f"class {instances_class(wf)}({base}[{state_class(wf)}]):",
                f"    {docstring(f'{what} {wf.name} ({where(wf.origin)})')}",
                "",
                f"    state = {state_class(wf)}",
                f"    table = tables.{instances_table_var(wf)}",
                f"    key = {py_str(naming.ident(key_of(wf)))}",
                f"    workflow = {py_str(wf.name)}",
                *process,
            ]
        )
    head = header(info.files_of(context), f"Repositories of context {context.name}.")
    return module_text(head, imports, blocks)


def _signature(
    name: str, params: list[tuple[str, ir.Type]], result: str, types: TypeNames, *, method: bool
) -> tuple[list[str], dict[str, str]]:
    py = _param_names([p for p, _ in params])
    items = (["self"] if method else []) + [f"{py[p]}: {types.render(t)}" for p, t in params]
    head = f"async def {name}(" if method else f"def {name}("
    return lay(Group(head, items, f") -> {result}:"), 1 if method else 0), py


def _param_names(params: Sequence[str]) -> dict[str, str]:
    """The Python names of a generated method's or criterion function's parameters."""
    alloc = naming.NameAlloc({"self", "c", "cls"})
    return {p: alloc.take(naming.ident(p)) for p in params}


# past this many arguments, a call of a repository method names them (as runtime calls do)
MAX_POSITIONAL = 2


def call_args(
    agg: ir.Aggregate, method: str, params: Sequence[str], values: Sequence[str]
) -> list[str]:
    """The arguments `values` of a call of repository method `method` of `agg`, whose
    parameters are `params` (model names): by position up to MAX_POSITIONAL, else every one by
    its keyword. A natural key's method of that name comes first in the class (a declared find
    matching the key's fields is generated as it), so its parameters are the key's fields."""
    if len(values) <= MAX_POSITIONAL:
        return list(values)
    for key in agg.unique:
        if method in (key_method("find", key), key_method("get", key)):
            params = key
            break
    names = _param_names(params)
    return [f"{names[p]}={v}" for p, v in zip(params, values, strict=True)]


def projection_rule_function(p: ir.Projection) -> str:
    return f"{naming.snake(p.name)}_read_rule"


def _projection_rule(p: ir.Projection, types: TypeNames, imports: Imports) -> list[str]:
    """`filter <condition>` of a projection, as a where-clause over its rows."""
    assert p.filter is not None
    imports.add("sqlalchemy", "ColumnElement")
    lines = [f"def {projection_rule_function(p)}() -> ColumnElement[bool]:"]
    lines.append(f"    {docstring(f'the read rule of projection {p.name} ({where(p.origin)})')}")
    scope = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None, params={})
    return lines + _where_body(p.filter, instances_table_var(p), scope)


def _criterion(
    context: ir.Context, crit: ir.Criterion, types: TypeNames, imports: Imports
) -> list[str]:
    imports.add("sqlalchemy", "ColumnElement")
    agg = context.aggregate(crit.aggregate)
    params = [(p.name, p.type) for p in crit.params]
    lines, py = _signature(
        criterion_function(crit.name), params, "ColumnElement[bool]", types, method=False
    )
    lines.append(f"    {docstring(f'criterion {crit.name} of {agg.name} ({where(crit.origin)})')}")
    scope = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None, params=py)
    return lines + _where_body(crit.condition, table_var(agg), scope)


def _where_body(condition: ir.Expr, table: str, scope: Scope) -> list[str]:
    """The body of a where-clause function: `condition` over the columns of `tables.<table>`."""
    sql = SqlRenderer(scope).where_doc(condition)
    lines = [f"    c = tables.{table}.c"]
    lines += lay(
        Group("return " + sql.head, sql.items, sql.tail)
        if isinstance(sql, Group)
        else f"return {sql}",
        1,
    )
    return lines


def _repository(
    info: ModelInfo, context: ir.Context, agg: ir.Aggregate, types: TypeNames, imports: Imports
) -> list[str]:
    cls = naming.pascal(agg.name)
    imports.add(".domain", cls)
    repo = context.repository_for(agg.name)
    if repo is not None:
        doc = f"repository {repo.name} for {agg.name} ({where(repo.origin)})"
    else:
        doc = f"the repository of aggregate {agg.name} ({where(agg.origin)})"
    lines = [
        f"class {info.repository_class(context, agg.name)}(Repository[{cls}]):",
        f"    {docstring(doc)}",
        "",
        f"    aggregate = {cls}",
        f"    table = tables.{table_var(agg)}",
    ]
    if agg.unique:
        keys = [_tuple([py_str(f) for f in key]) for key in agg.unique]
        lines += lay(f"unique = {_tuple(keys)}", 1)
    if repo is not None and repo.filters:
        # read-only, as a class attribute shared by every instance should be (ruff's RUF012)
        imports.add("types", "MappingProxyType")
        entries = [f"{py_str(n)}: {criterion_function(n)}" for n in repo.filters]
        lines += lay(Group("filters = MappingProxyType(", [Group("{", entries, "}")], ")"), 1)
    methods: dict[str, list[str]] = {}
    fields = {f.name: f for f in agg.fields}
    for key in agg.unique:
        params = [(f, fields[f].type) for f in key]
        cond = key_condition(tuple(fields[f] for f in key), {f: f for f in key})
        what = f"natural key unique ({', '.join(key)}) of {agg.name} ({where(agg.origin)})"
        for prefix in ("find", "get"):
            call = "find_one" if prefix == "find" else "get_one"
            methods.setdefault(
                key_method(prefix, key),
                _method(key_method(prefix, key), params, call, cls, cond, what, types, imports),
            )
    for crit in context.criteria_of(agg.name):
        params = [(p.name, p.type) for p in crit.params]
        base = naming.snake(crit.name)
        what = f"criterion {crit.name} ({where(crit.origin)})"
        for name, call in ((f"find_by_{base}", "find_one"), (f"find_all_by_{base}", "find_all")):
            methods.setdefault(
                name, _crit_method(name, params, call, cls, crit, what, types, imports)
            )
    for ret in context.retrievals_of(agg.name):
        params = [(p.name, p.type) for p in ret.params]
        name = f"run_{naming.snake(ret.name)}"
        crit = context.criterion(ret.criterion)
        what = f"retrieval {ret.name} ({where(ret.origin)})"
        methods.setdefault(name, _ret_method(name, params, cls, ret, crit, what, types, imports))
    for find in repo.finds if repo is not None else ():
        params = [(p.name, p.type) for p in find.params]
        pmap = {f: p.name for f, p in zip(find.fields, find.params, strict=True)}
        cond = key_condition(tuple(fields[f] for f in find.fields), pmap)
        call = {"one": "get_one", "optional": "find_one", "many": "find_all"}[find.cardinality]
        name = find_method(find)
        what = f"find {find.name} of {repo.name if repo else agg.name} ({where(find.origin)})"
        methods.setdefault(
            name, _method(name, params, call, cls, cond, what, types, imports, find.fields)
        )
    for body in methods.values():
        lines.append("")
        lines.extend(body)
    return lines


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def _result(call: str, cls: str) -> str:
    return {"find_one": f"{cls} | None", "get_one": cls, "find_all": f"list[{cls}]"}[call]


def _method(
    name: str,
    params: list[tuple[str, ir.Type]],
    call: str,
    cls: str,
    cond: ir.Expr,
    what: str,
    types: TypeNames,
    imports: Imports,
    keys: tuple[str, ...] | None = None,
) -> list[str]:
    """`keys`: the fields the parameters match, in their order (the parameters' names if None)."""
    lines, py = _signature(name, params, _result(call, cls), types, method=True)
    lines.append(f"        {docstring(what)}")
    scope = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None, params=py)
    lines.append("        c = self.table.c")
    args: list[Doc] = [SqlRenderer(scope).where_doc(cond)]
    if call == "get_one":
        # the fields the miss names (`no Due with booking …`), by their model names
        named = keys if keys is not None else tuple(p for p, _ in params)
        pairs = [f"{py_str(f)}: {py[p]}" for f, (p, _) in zip(named, params, strict=True)]
        args.append(Group("key={", pairs, "}"))
    lines += lay(Group(f"return await self.{call}(", args, ")"), 2)
    return lines


def _crit_method(
    name: str,
    params: list[tuple[str, ir.Type]],
    call: str,
    cls: str,
    crit: ir.Criterion,
    what: str,
    types: TypeNames,
    imports: Imports,
) -> list[str]:
    lines, py = _signature(name, params, _result(call, cls), types, method=True)
    lines.append(f"        {docstring(what)}")
    args = ", ".join(py[p] for p, _ in params)
    lines += lay(f"return await self.{call}({criterion_function(crit.name)}({args}))", 2)
    return lines


def _ret_method(
    name: str,
    params: list[tuple[str, ir.Type]],
    cls: str,
    ret: ir.Retrieval,
    crit: ir.Criterion,
    what: str,
    types: TypeNames,
    imports: Imports,
) -> list[str]:
    lines, py = _signature(name, params, f"list[{cls}]", types, method=True)
    lines.append(f"        {docstring(what)}")
    scope = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None, params=py)
    args = ", ".join(
        render_as(a, p.type, scope) for a, p in zip(ret.args, crit.params, strict=True)
    )
    lines += lay(f"return await self.find_all({criterion_function(crit.name)}({args}))", 2)
    return lines
