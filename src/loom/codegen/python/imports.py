"""The imports of a generated module: collected while its body is rendered, then written in
isort's sections and order (future, standard library, third party, relative). `loom` is third
party: in a user's project it is an installed dependency, so the imports pass their isort as built."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.codegen.python.layout import LINE_LENGTH, Group, flat, lay

_STDLIB = {
    "collections",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "functools",
    "logging",
    "pathlib",
    "types",
    "typing",
    "uuid",
}


def _section(module: str) -> int:
    if module == "__future__":
        return 0
    if module.startswith("."):
        return 4
    top = module.split(".")[0]
    if top in _STDLIB:
        return 1
    return 2


def _name_key(name: str) -> tuple[int, str]:
    base = name.split(" as ")[0]
    if base.isupper() and len(base) > 1:
        kind = 0
    elif base[:1].isupper():
        kind = 1
    else:
        kind = 2
    return (kind, base.lower())


@dataclass
class Imports:
    """The imports a module needs, collected while its body is rendered."""

    froms: dict[str, set[str]] = field(default_factory=dict)
    plain: set[str] = field(default_factory=set)
    # module-level constants the body refers to (name -> literal), written right after the
    # imports: a value the module repeats, such as a process name, is spelled once
    constants: dict[str, str] = field(default_factory=dict)

    def constant(self, name: str, literal: str) -> str:
        """The name of a module constant holding `literal`: `name`, or `name_2`, … when that is
        taken by another value."""
        taken, n = name, 1
        while self.constants.setdefault(taken, literal) != literal:
            n += 1
            taken = f"{name}_{n}"
        return taken

    def add(self, module: str, *names: str) -> None:
        found = self.froms.get(module)
        if found is None:
            self.froms[module] = set(names)
        else:
            found.update(names)

    def discard(self, module: str, *names: str) -> None:
        """Forget names added for code that was not written after all."""
        found = self.froms.get(module)
        if found is not None:
            found.difference_update(names)
            if not found:
                del self.froms[module]

    def module(self, module: str) -> None:
        self.plain.add(module)

    def lines(self) -> list[str]:
        sections: dict[int, list[str]] = {}
        for mod in sorted(self.plain):
            sections.setdefault(_section(mod), []).append(f"import {mod}")
        for mod in sorted(self.froms, key=_module_key):
            # an aliased name is a statement of its own; a module's statements go in the order of
            # their first names
            names = sorted((n for n in self.froms[mod] if " as " not in n), key=_name_key)
            statements = [[n] for n in self.froms[mod] if " as " in n]
            if names:
                statements.append(names)
            for stmt in sorted(statements, key=lambda names: _name_key(names[0])):
                sections.setdefault(_section(mod), []).extend(_from_import(mod, stmt))
        out: list[str] = []
        for key in sorted(sections):
            if out:
                out.append("")
            out.extend(sections[key])
        return out


def _module_key(module: str) -> tuple[int, str]:
    """isort's order of `from` modules in a section: relative ones furthest first (`..x` before
    `.`, `.` before `.domain`), each level by name."""
    rest = module.lstrip(".")
    return (-(len(module) - len(rest)), rest)


def _from_import(module: str, names: list[str]) -> list[str]:
    group = Group(f"from {module} import (", names, ")")
    if len(flat(group)) <= LINE_LENGTH:
        return [f"from {module} import {', '.join(names)}"]
    return lay(group)
