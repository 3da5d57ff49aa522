"""`main.py` (the app factory), `_metadata.py` (the one MetaData) and the package `__init__.py`s."""

from __future__ import annotations

from loom.codegen.python.api_calls import api_resources
from loom.codegen.python.console import CONSOLE_FILE, has_console
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import instance_out_class, keyed, process_name
from loom.codegen.python.layout import Doc, Group, call, lay
from loom.codegen.python.literals import docstring, py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text
from loom.codegen.python.reactions import event_type
from loom.codegen.python.subset import broker_consumers
from loom.model import ir, naming
from loom.model.telemetry import qualified

# beside main.py: the AsyncAPI document of the package (`asyncapi.py`), served at /asyncapi.json
ASYNCAPI_FILE = "asyncapi.json"


def app_title(info: ModelInfo) -> str:
    return ", ".join(c.name for c in info.held()) or info.package


def emit_main(
    info: ModelInfo,
    routers: list[tuple[str, str]],
    externs: list[tuple[str, list[str]]] | None = None,
    reactions: list[str] | None = None,
) -> str:
    """`routers` lists (context module, module name) pairs whose `router` the app mounts;
    `externs` the (class, methods) of extern operations the user's module must provide (the app
    then takes `extern_module`, else LOOM_EXTERN_MODULE, and loads it at startup); `reactions`
    the context modules with a `reactions.py`, whose `subscribe(service)` the app runs at start.
    The model's channels become `CHANNELS`, and the events they carry are registered, so the
    relay can decode them; the model's revision becomes `MODEL_REVISION`, which the service
    stamps on every event it writes. The app serves `asyncapi.json`, read from beside main.py."""
    imports = Imports()
    imports.add("fastapi", "FastAPI")
    imports.add("pathlib", "Path")
    imports.add("loom.runtime", "create_app")
    imports.add("._metadata", "metadata")
    # Each context's routes import its repositories, which import its tables: that registers every
    # table on the MetaData.
    refs: list[str] = []
    for mod, kind in routers:
        imports.add(f".{mod}", f"{kind} as {mod}_{kind}")
        refs.append(f"{mod}_{kind}.router")
    args: list[Doc] = [
        f"title={py_str(app_title(info))}",
        "metadata=metadata",
        Group("routers=[", refs, "]"),
        "database_url=database_url",
        f"asyncapi=Path(__file__).with_name({py_str(ASYNCAPI_FILE)})",
    ]
    blocks: list[list[str]] = []
    if info.model.revision:
        blocks.append(
            [
                "# The revision of the model this package was generated from: every event the",
                "# service writes carries it, and a consumer logs the revision of each it reads.",
                f"MODEL_REVISION = {py_str(info.model.revision)}",
            ]
        )
        args.append("model_revision=MODEL_REVISION")
    if info.subset is not None:
        names = [py_str(name) for name in info.subset.held]
        held = (
            [f"CONTEXTS = ({names[0]},)"]
            if len(names) == 1
            else lay(Group("CONTEXTS = (", names, ")"))
        )
        blocks.append(["# The contexts this service holds (one deployable of the model).", *held])
        args.append("contexts=CONTEXTS")
    tenanted = [py_str(c.name) for c in info.held() if c.tenanted]
    if tenanted:
        # they need authentication: without it the app refuses to build
        args.append(Group("tenanted=[", tenanted, "]"))
    channels = info.channels()
    if channels:
        blocks.append(_channels(info, channels, imports))
        args += ["channels=CHANNELS", "event_types=EVENT_TYPES"]
    if _keeps_timers(info):
        # known before the lifespan registers the handlers: it mounts the dead-letter routes,
        # where dead timeouts are listed, and the timer routes
        args.append("processes=True")
    if has_console(info):
        # the processes' state machines, which the admin route of an instance answers, and
        # what each event sets off, which the console's redrive dialog shows, and the model's
        # diagrams the console draws
        args.append(f"console_views=Path(__file__).with_name({py_str(CONSOLE_FILE)})")
    constants = [
        (
            "INSTANCE_ANSWERS",
            "instance_answers",
            Group("{", _instance_answers(info, imports), "}"),
            "# What an ended episode of each process workflow is archived as: its instance as\n"
            "# the instance route answers it.",
        ),
        (
            "API_RESOURCES",
            "api_resources",
            Group("[", api_resources(info, imports), "]"),
            "# The `resource { kind: api }` bindings: calls of other contexts' handlers, in\n"
            "# process when this service holds the context, else at LOOM_API_<CONTEXT>.",
        ),
    ]
    for name, param, value, comment in constants:
        if value.items:
            assign = Group(f"{name} = {value.head}", value.items, value.tail)
            blocks.append([*comment.split("\n"), *lay(assign)])
            args.append(f"{param}={name}")
    if reactions:
        blocks.append(_subscribe(info, reactions, imports))
        args.append("subscribe=subscribe")
    if externs:
        params = ["database_url: str | None = None", "extern_module: str | None = None"]
        lines = lay(Group("def build_app(", params, ") -> FastAPI:"))
        doc = (
            f"The {app_title(info)} service; database_url defaults to LOOM_DATABASE_URL, "
            "extern_module to LOOM_EXTERN_MODULE."
        )
        items = [
            f"{py_str(cls)}: ({''.join(py_str(m) + ', ' for m in methods).rstrip(' ')})"
            if len(methods) == 1
            else f"{py_str(cls)}: ({', '.join(py_str(m) for m in methods)})"
            for cls, methods in externs
        ]
        args += [Group("externs={", items, "}"), "extern_module=extern_module"]
    else:
        lines = ["def build_app(database_url: str | None = None) -> FastAPI:"]
        doc = f"The {app_title(info)} service; database_url defaults to LOOM_DATABASE_URL."
    lines.append("    " + docstring(doc))
    lines += lay(call("create_app", args, prefix="return "), 1)
    head = header(
        info.all_files(), "The app factory: `uvicorn --factory <package>.main:build_app`."
    )
    return module_text(head, imports, [*blocks, lines])


def _keeps_timers(info: ModelInfo) -> bool:
    """Whether the service keeps process tables: it arms timeouts or runs context timers (its
    timer rows can die), or a workflow completes (`wf.process`: a `complete` with no timeout
    still disarms the instance's timers and closes its episode)."""
    return any(c.timers or any(wf.process for wf in c.workflows) for c in info.held())


def _duration(ms: int) -> str:
    if ms % 1000:
        return f"timedelta(milliseconds={ms})"
    return f"timedelta(seconds={ms // 1000})"


def _channels(info: ModelInfo, channels: list[ir.Channel], imports: Imports) -> list[str]:
    """`CHANNELS`: one runtime Channel per `channel` (named `<Context>.<Name>`), and
    `EVENT_TYPES`: the event classes they carry."""
    imports.add("datetime", "timedelta")
    imports.add("loom.runtime", "Backoff", "Channel", "DomainEvent")
    items: list[Doc] = []
    carried: dict[ir.EventType, None] = {}  # an ordered set: a list's `in` is quadratic
    held = None if info.subset is None else info.subset.held
    for ch, readers in zip(channels, broker_consumers(info.model, channels, held), strict=True):
        first, cap = ch.backoff_ms
        backoff = call(
            "Backoff",
            [f"initial={_duration(first)}", f"maximum={_duration(cap)}"],
            prefix="backoff=",
        )
        events = [py_str(qualified(e.context, e.name)) for e in ch.events]
        name = py_str(qualified(ch.context, ch.name))
        args: list[Doc] = [
            name,
            Group("[", events, "]"),
            f"retention={py_str(ch.retention)}",
            f"max_attempts={ch.max_attempts}",
            backoff,
        ]
        if ch.source is not None:
            args.append(f"source={py_str(ch.source)}")
        specs: list[Doc] = [
            call(
                "ConsumerSpec",
                [
                    f"name={py_str(c.name)}",
                    f"channel={name}",
                    f"event_types=({py_str(event_type(c.reaction.event))},)",
                ],
            )
            for c in readers
        ]
        if specs:
            imports.add("loom.runtime", "ConsumerSpec")
            args.append(Group("consumers=[", specs, "]"))
        items.append(call("Channel", args))
        carried.update(dict.fromkeys(ch.events))
    classes: list[Doc] = []
    for e in carried:
        mod = naming.context_module(info.context(e.context))
        imports.add(f".{mod}", f"domain as {mod}_domain")
        classes.append(f"{mod}_domain.{naming.pascal(e.name)}")
    lines = [
        "# The durable channels of the model: their events go through the outbox and the relay."
    ]
    lines += lay(Group("CHANNELS = [", items, "]"))
    lines.append("# The events they carry, registered so the relay can decode them.")
    lines += lay(Group("EVENT_TYPES: list[type[DomainEvent]] = [", classes, "]"))
    return lines


def _subscribe(info: ModelInfo, reactions: list[str], imports: Imports) -> list[str]:
    imports.add("loom.runtime", "Service")
    lines = [
        "def subscribe(service: Service) -> None:",
        "    " + docstring("Subscribe every reaction of the model to its event (at app start)."),
    ]
    for mod in reactions:
        imports.add(f".{mod}", f"reactions as {mod}_reactions")
        lines.append(f"    {mod}_reactions.subscribe(service)")
    return lines


def emit_metadata(info: ModelInfo) -> str:
    imports = Imports()
    imports.add("sqlalchemy", "MetaData")
    head = header(info.all_files(), "The one MetaData every context's tables register on.")
    return module_text(head, imports, [["metadata = MetaData()"]])


def emit_package_init(info: ModelInfo) -> str:
    head = header(info.all_files(), f"The {app_title(info)} service package.")
    return "\n".join(head) + "\n"


def emit_context_init(info: ModelInfo, files: list[str], context_name: str) -> str:
    head = header(files, f"Context {context_name}.")
    return "\n".join(head) + "\n"


def _instance_answers(info: ModelInfo, imports: Imports) -> list[Doc]:
    """`"<Context>.<Workflow>": <Workflow>InstanceOut` for each process workflow held."""
    items: list[Doc] = []
    for ctx in info.held():
        mod = naming.context_module(ctx)
        for wf in keyed(ctx):
            if isinstance(wf, ir.Workflow) and wf.process:
                imports.add(f".{mod}", f"schemas as {mod}_schemas")
                items.append(f"{py_str(process_name(wf))}: {mod}_schemas.{instance_out_class(wf)}")
    return items
