"""Constraints a declared type puts on its values beyond its Python type: the N of `string(N)`,
checked as an implicit invariant of the aggregate, value object or event holding the field."""

from __future__ import annotations

from collections.abc import Sequence

from loom.model import ir, naming


def max_length(t: ir.Type) -> int | None:
    """N of a `string(N)`, `string(N)?`, `string(N)[]` or `string(N)[]?`."""
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    return t.max_length if isinstance(t, ir.PrimitiveType) else None


def length_checks(
    owner: str, fields: Sequence[ir.Field | ir.Parameter]
) -> list[tuple[str, str, str]]:
    """(condition, rule, detail) of each `string(N)` field: an implicit invariant of its
    aggregate, value object or event, so an operation assigning a longer string is refused (422)."""
    checks = []
    for f in fields:
        n = max_length(f.type)
        if n is None:
            continue
        attr = f"self.{naming.ident(f.name)}"
        inner = f.type.inner if isinstance(f.type, ir.OptionalType) else f.type
        cond = (
            f"all(len(v) <= {n} for v in {attr})"
            if isinstance(inner, ir.ListType)
            else f"len({attr}) <= {n}"
        )
        if isinstance(f.type, ir.OptionalType):
            cond = f"{attr} is None or {cond}"
        what = "each of its strings is" if isinstance(inner, ir.ListType) else "it is"
        detail = f"{f.name}: {what} at most {n} characters"
        checks.append((cond, f"{owner}: {f.name}: string({n})", detail))
    return checks
