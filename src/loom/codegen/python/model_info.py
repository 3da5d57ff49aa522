"""What every emitter looks up in the model: its contexts and their declarations, the repository
class of an aggregate, and which model files each generated module comes from."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from loom.codegen.python.subset import Subset
from loom.model import ir, naming


@dataclass
class ModelInfo:
    model: ir.Model
    package: str
    # the service of a set of contexts (a deployable); None: of the whole model
    subset: Subset | None = None
    contexts: dict[str, ir.Context] = field(default_factory=dict)
    # context name -> `files_of` it: a dozen emitters ask for it, and it walks the whole context
    _files_of: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.contexts = {c.name: c for c in self.model.contexts}

    def context(self, name: str) -> ir.Context:
        return self.contexts[name]

    def held(self) -> list[ir.Context]:
        """The contexts the service runs: all of the model's, or those of its subset."""
        if self.subset is None:
            return list(self.model.contexts)
        return [self.contexts[name] for name in self.subset.held]

    def channels(self) -> list[ir.Channel]:
        """The channels the service publishes to or consumes from."""
        if self.subset is None:
            return [ch for c in self.model.contexts for ch in c.channels]
        return list(self.subset.channels)

    def aggregate(self, context: str, name: str) -> ir.Aggregate:
        return self.contexts[context].aggregate(name)

    def event(self, context: str, name: str) -> ir.Event:
        return self.contexts[context].event(name)

    def enum(self, context: str, name: str) -> ir.Enum:
        return self.contexts[context].enum(name)

    def operation(self, context: str, aggregate: str, name: str) -> ir.Operation:
        agg = self.aggregate(context, aggregate)
        return next(o for o in agg.operations if o.name == name)

    def repository_class(self, context: ir.Context, aggregate: str) -> str:
        repo = context.repository_for(aggregate)
        return (
            naming.pascal(repo.name)
            if repo is not None
            else naming.pascal(aggregate) + "Repository"
        )

    def all_files(self) -> list[str]:
        files: list[str] = list(self.model.sources)
        for ctx in self.model.contexts:
            # `files_of` is the context's files with those of the model's sources first: the same
            # files not among the sources, in the same order, and walked once per context
            for f in self.files_of(ctx):
                if f not in files:
                    files.append(f)
        return files

    def files_of(self, context: ir.Context) -> list[str]:
        known = self._files_of.get(context.name)
        if known is None:
            own = context_files(context)
            ordered = [f for f in self.model.sources if f in own]
            ordered += [f for f in own if f not in ordered]
            known = self._files_of[context.name] = ordered
        return list(known)


class _HasOrigin(Protocol):
    @property
    def origin(self) -> ir.Origin: ...


def _origins(context: ir.Context) -> Iterator[ir.Origin]:
    yield context.origin
    groups: tuple[tuple[_HasOrigin, ...], ...] = (
        context.enums,
        context.aggregates,
        context.repositories,
        context.events,
        context.workflows,
        context.criteria,
        context.retrievals,
        context.handlers,
        context.services,
        context.values,
        context.payloads,
        context.projections,
        context.channels,
    )
    for group in groups:
        for decl in group:
            yield decl.origin
    for agg in context.aggregates:
        members: tuple[tuple[_HasOrigin, ...], ...] = (
            agg.fields,
            agg.derived,
            agg.invariants,
            agg.functions,
            agg.operations,
        )
        for group in members:
            yield from (member.origin for member in group)
    for wf in context.workflows:
        for create in wf.creates:
            yield create.origin
        for reaction in wf.reactions:
            yield reaction.origin
    for p in context.projections:
        for reaction in p.reactions:
            yield reaction.origin


def context_files(context: ir.Context) -> list[str]:
    return list(dict.fromkeys(origin.file for origin in _origins(context)))
