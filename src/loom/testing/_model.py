"""A model loaded for the test kit's process steps (docs/processes.md, "A workflow of the model"):
compiled with the real compiler, generated into a package of its own and imported. Its workflows,
events and aggregates are looked up by the model's names:

    model = load_model("examples/scheduling/scheduling.loom")
    deadline = model.workflow("Scheduling.ConfirmationDeadline")
    confirmed = model.event("Scheduling.AppointmentConfirmed", appointment=a.id)
    a = model.aggregate("Scheduling.Appointment", patient="Ada", confirmBefore=at, ...)

A declaration is named `Context.Name`, or `Name` when one context has it; fields as the model spells
them (`confirmBefore`). A name the model does not have, or a value of the wrong type, is a
`ModelUsageError` that says what the model has.

The package is this module's alone (never the one `serve` runs), because its aggregates' operations
are spied on: while a step runs, each operation the step calls, and each aggregate it creates, is
recorded as a `Call` (the operation still runs; what it calls in turn is its own business).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import inspect
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from loom.codegen.python.keyed import instances_class, state_class
from loom.model import ir, naming
from loom.testing._service import compile_model, generate, model_digest

T = TypeVar("T")


class ModelUsageError(ValueError):
    """A test named a workflow, event, aggregate, field or timeout the model does not have, or gave
    a value of the wrong type; the message says what the model has."""


@dataclass(frozen=True)
class Call:
    """An aggregate operation a step called (`Appointment.release`, on the aggregate `id`, with its
    arguments by the model's parameter names), or an aggregate it created (`operation` "create",
    `args` its fields)."""

    aggregate: str
    operation: str
    id: object
    args: Mapping[str, Any]

    @property
    def name(self) -> str:
        """`Aggregate.operation`, as the model writes the call."""
        return f"{self.aggregate}.{self.operation}"


@dataclass(frozen=True)
class DueTimeout:
    """`workflow.timeout(name)`: what `when` fires, the `on timeout` of that name."""

    workflow: str
    name: str


_calls: ContextVar[list[Call] | None] = ContextVar("loom_testing_calls", default=None)


@contextmanager
def recording_calls() -> Iterator[list[Call]]:
    """Record the aggregate calls made in the block (of models loaded by `load_model`)."""
    calls: list[Call] = []
    token = _calls.set(calls)
    try:
        yield calls
    finally:
        _calls.reset(token)


_loaded: dict[str, Model] = {}


def load_model(*model_files: str | Path) -> Model:
    """Compile the files as one model and generate and import its service, once per process for
    the same files and contents (`ModelError` with the diagnostics when they do not compile)."""
    if not model_files:
        raise ModelUsageError("load_model needs at least one .loom file")
    digest = model_digest(model_files)
    if digest not in _loaded:
        compiled = compile_model(model_files)
        # one package for the whole model: a step is tested without deployables or brokers
        whole = dataclasses.replace(compiled, deployables=(), channel_sources=())
        _loaded[digest] = Model(whole, generate(whole, f"given_{digest}"))
    return _loaded[digest]


class Model:
    """A compiled model (`ir`) and its generated package (`main`)."""

    def __init__(self, model: ir.Model, main: ModuleType) -> None:
        self.ir = model
        self.main = main
        self.package = main.__name__.rsplit(".", 1)[0]
        self.metadata = self._module("_metadata").metadata
        by_name = {f"{c.name}.{w.name}": (c, w) for c in model.contexts for w in c.workflows}
        self._workflows = {name: Workflow(self, c, w) for name, (c, w) in by_name.items()}
        self._events = {f"{c.name}.{e.name}": (c, e) for c in model.contexts for e in c.events}
        self._aggregates = {
            f"{c.name}.{a.name}": (c, a) for c in model.contexts for a in c.aggregates
        }
        for context, aggregate in self._aggregates.values():
            _spy_on(self.domain(context), aggregate)

    def _module(self, dotted: str) -> ModuleType:
        return importlib.import_module(f"{self.package}.{dotted}")

    def module(self, context: ir.Context, name: str) -> ModuleType:
        """A module of a context's generated package: `domain`, `repositories`, `workflows`…"""
        return self._module(f"{naming.context_module(context)}.{name}")

    def domain(self, context: ir.Context) -> ModuleType:
        return self.module(context, "domain")

    def workflow(self, name: str) -> Workflow:
        """The workflow `Context.Name` (or `Name`, when one context has it)."""
        return lookup("workflow", name, self._workflows)

    # The classes are generated when the model is loaded, so no type checker knows them: an event
    # or an aggregate is typed Any, to be read as the generated class (`a.id`, `a.status`).

    def event(self, name: str, /, **fields: Any) -> Any:
        """An event of the model (a `DomainEvent`), its fields by the model's names
        (`confirmBefore=…`)."""
        context, event = lookup("event", name, self._events)
        cls = getattr(self.domain(context), naming.pascal(event.name))
        return build(cls, f"event {context.name}.{event.name}", event.fields, fields)

    def aggregate(self, name: str, /, **fields: Any) -> Any:
        """A stored aggregate (an `AggregateRoot`) for a step to find (`given_process(…,
        aggregates=[…])`), its fields by the model's names; `id=` too, else a new one."""
        context, aggregate = lookup("aggregate", name, self._aggregates)
        cls = getattr(self.domain(context), naming.pascal(aggregate.name))
        label = f"aggregate {context.name}.{aggregate.name}"
        return build(cls, label, aggregate.fields, fields, extra=("id",))


class Workflow:
    """A workflow of a loaded model: `given_process(workflow, …)` tests its steps."""

    def __init__(self, model: Model, context: ir.Context, workflow: ir.Workflow) -> None:
        self.model = model
        self.context = context
        self.ir = workflow
        self.name = f"{context.name}.{workflow.name}"

    def __repr__(self) -> str:
        return f"<workflow {self.name}>"

    def timeout(self, name: str) -> DueTimeout:
        """Its `on timeout NAME`, for `when`."""
        names = [t.name for t in self.ir.timeouts]
        if name not in names:
            has = f"its timeouts: {', '.join(names)}" if names else "it has no `on timeout`"
            raise ModelUsageError(
                f"workflow {self.name} has no timeout {name!r}{hint(name, names)}; {has}"
            )
        return DueTimeout(self.name, name)

    @property
    def state_class(self) -> type[Any]:
        cls: type[Any] = getattr(self.model.domain(self.context), state_class(self.ir))
        return cls

    @property
    def instances_class(self) -> type[Any]:
        repositories = self.model.module(self.context, "repositories")
        cls: type[Any] = getattr(repositories, instances_class(self.ir))
        return cls


def lookup(kind: str, name: str, found: Mapping[str, T]) -> T:
    """`found[name]`, keyed `Context.Name`; a bare `Name` when one context has it."""
    if name in found:
        return found[name]
    short = [k for k in found if k.split(".", 1)[1] == name]
    if len(short) == 1:
        return found[short[0]]
    if short:
        raise ModelUsageError(
            f"{kind} {name!r} is in several contexts: name one of {', '.join(short)}"
        )
    have = ", ".join(found) if found else "none"
    raise ModelUsageError(
        f"the model has no {kind} {name!r}{hint(name, list(found))} (its {kind}s: {have})"
    )


def hint(name: str, names: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def build(
    cls: type[T],
    label: str,
    fields: Sequence[ir.Field],
    given: Mapping[str, Any],
    *,
    extra: Sequence[str] = (),
) -> T:
    """An instance of a generated class from `given` (by the model's field names), validated and
    converted as the service would (text to an id, an ISO string to a datetime…)."""
    python = {f.name: naming.ident(f.name) for f in fields} | {e: e for e in extra}
    unknown = [k for k in given if k not in python]
    if unknown:
        raise ModelUsageError(
            f"{label} has no field {unknown[0]!r}{hint(unknown[0], list(python))}; "
            f"its fields: {', '.join(python) or 'none'}"
        )
    try:
        built: T = _adapter(cls).validate_python({python[k]: v for k, v in given.items()})
        return built
    except ValidationError as err:
        model_names = {v: k for k, v in python.items()}
        problems = "; ".join(
            f"{'.'.join(model_names.get(str(p), str(p)) for p in e['loc'])}: {e['msg']}"
            for e in err.errors()
        )
        raise ModelUsageError(f"{label}: {problems}") from None


_adapters: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    if cls not in _adapters:
        _adapters[cls] = TypeAdapter(cls)
    return _adapters[cls]


def _spy_on(domain: ModuleType, aggregate: ir.Aggregate) -> None:
    """Record the calls steps make on `aggregate`: its operations (not the private ones, which
    only the aggregate calls, nor the extern ones, which are the user's) and its `create`."""
    cls = getattr(domain, naming.pascal(aggregate.name))
    for op in aggregate.operations:
        method = cls.__dict__.get(naming.ident(op.name))
        if method is not None and not op.private and not op.extern:
            setattr(cls, naming.ident(op.name), _operation_spy(aggregate.name, op, method))
    create = cls.__dict__.get(naming.create_method(aggregate))
    if isinstance(create, classmethod):
        params = aggregate.factory.params if aggregate.factory else aggregate.fields
        names = {naming.ident(p.name): p.name for p in params}
        setattr(cls, naming.create_method(aggregate), _create_spy(aggregate.name, names, create))


def _operation_spy(aggregate: str, op: ir.Operation, method: Any) -> Any:
    signature = inspect.signature(method)
    names = {naming.ident(p.name): p.name for p in op.params}

    @functools.wraps(method)
    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls = _calls.get()
        if calls is None:
            return method(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs).arguments
        values = {names.get(k, k): v for k, v in list(bound.items())[1:]}
        calls.append(Call(aggregate, op.name, self.id, values))
        token = _calls.set(None)  # the operations it calls in turn are its own business
        try:
            return method(self, *args, **kwargs)
        finally:
            _calls.reset(token)

    return spy


def _create_spy(
    aggregate: str, names: Mapping[str, str], create: classmethod[Any, Any, Any]
) -> Any:
    made_by = create.__func__

    @functools.wraps(made_by)
    def spy(cls: Any, *args: Any, **kwargs: Any) -> Any:
        calls = _calls.get()
        if calls is None:
            return made_by(cls, *args, **kwargs)
        token = _calls.set(None)
        try:
            made = made_by(cls, *args, **kwargs)
        finally:
            _calls.reset(token)
        values = {names.get(k, k): v for k, v in kwargs.items()}
        calls.append(Call(aggregate, "create", made.id, values))
        return made

    return classmethod(spy)
