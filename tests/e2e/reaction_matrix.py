"""The model of tests/e2e/test_reaction_matrix.py, generated: one workflow per accepted
(workflow kind, trigger, delivery path), each of whose bodies does the same three things to a
`Thing` of its own, so one HTTP read-back per effect tells that it ran:

- the aggregate changed: `Things.getById(...)`, `hit()` (`hits` is 1);
- an event was emitted: `DoneD` (on the durable channel) or `DoneL` (in-process), `by` the case's
  name, folded by the projections `Seen` (keyed `by`: `count` is 1, `last` the case) and `Keyed`
  (keyed by its first assignment: `count` is 1);
- the instance's state changed, in a workflow that keeps one: `n := n + 1`, or in an event-sourced
  one the `apply` of that `Done` (`n` is 1).

Kinds: `stateless` (no id-shaped state field), `correlated` (one), `eventSourced` (one, folded
by `apply`), `process` (one, and a timeout: every step arms or handles one). Triggers: the
command `create`, an event-triggered `create` (a starter), an `on` (to the instance a command
started), an `on timeout` (armed by a starter, fired by the virtual clock or by the operators'
fire route) and the context `timer` (kindless: a context's sweep, not a workflow's; by the clock
or the fire route). Paths: the trigger event (and `Done`) on a channel, delivered by the outbox
relay, or on no channel, dispatched in-process. The starters and `on`s also react to an event of
another context (`far`: `Far.Go…`, raised by a `Bell` of context Far about the Thing).

Refused by the language, so not generated: `REFUSED`, each with the diagnostic that refuses it
(asserted by test_refused_forms). A correlated workflow with a timeout is the `process` kind.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("stateless", "correlated", "eventSourced", "process")
TRIGGERS = ("command", "starter", "on", "timeout@clock", "timeout@fire")
TIMER_TRIGGERS = ("timer@clock", "timer@fire")
PATHS = ("durable", "inProcess")
ACCEPTED = {
    "stateless": ("command", "starter", "on"),
    "correlated": ("command", "starter", "on"),
    "eventSourced": TRIGGERS,
    "process": TRIGGERS,
}
# a timeout the clock fires is due in an hour; one the route fires, or one a process step arms
# only to be one, is never due within the module's few virtual hours
SOON, NEVER = "1h", "1000d"


@dataclass(frozen=True)
class Case:
    kind: str  # one of KINDS, or "timer"
    trigger: str
    path: str
    far: bool = False  # the trigger event is another context's (`Far.Go…`, raised by a Bell)

    @property
    def name(self) -> str:
        """`eventSourced-timeout@clock-durable`: the test id, and the `by` of its `Done`."""
        return f"{self.kind}-{self.trigger}-{self.path}" + ("-far" if self.far else "")

    @property
    def pascal(self) -> str:
        words = [self.kind, *self.trigger.replace("@", " ").split(), self.path]
        words += ["far"] if self.far else []
        return "".join(w[0].upper() + w[1:] for w in words)

    @property
    def workflow(self) -> str:
        return self.pascal

    @property
    def event(self) -> str:
        """The trigger event of an event-triggered case (`starter`, `on`, and the starter that
        arms a timeout)."""
        return f"Go{self.pascal}"

    @property
    def event_ref(self) -> str:
        """The trigger event as the workflow (in context Matrix) names it."""
        return f"Far.{self.event}" if self.far else self.event

    @property
    def operation(self) -> str:
        """The Thing (or, far, the Bell) operation that emits the trigger event."""
        return f"go{self.pascal}"

    @property
    def done(self) -> str:
        return "DoneD" if self.path == "durable" else "DoneL"

    @property
    def stateful(self) -> bool:
        return self.kind in ("correlated", "eventSourced", "process")

    @property
    def by_event(self) -> bool:
        return self.trigger in ("starter", "on") or self.trigger.startswith("timeout")


CASES = [
    *(Case(k, t, p) for k in KINDS for t in ACCEPTED[k] for p in PATHS),
    *(Case(k, t, p, far=True) for k in KINDS for t in ("starter", "on") for p in PATHS),
    *(Case("timer", t, p) for t in TIMER_TRIGGERS for p in PATHS),
]


# (kind, form) -> (the workflow's members, the diagnostic that refuses them)
REFUSED: dict[tuple[str, str], tuple[str, str]] = {
    ("stateless", "timeout"): (
        "create(e: Go) { schedule due after 1h }  on timeout due { }",
        "loom.timeout-outside-process",
    ),
    ("stateless", "starter by"): ("create(e: Go) by e.thing { }", "loom.reactor-uncorrelated"),
    ("stateless", "on by"): ("on(e: Go) by e.thing { }", "loom.reactor-uncorrelated"),
    ("correlated", "on without by"): (
        "thing: Thing id  on(e: Go) { }",
        "loom.reactor-uncorrelated",
    ),
    ("correlated", "starter without by"): (
        "thing: Thing id  create(e: Go) { }",
        "loom.state-correlation-missing",
    ),
    ("correlated", "command by"): (
        "thing: Thing id  create(thing: Thing id) by thing { }",
        "loom.by-without-event",
    ),
}


def refused_model(members: str) -> str:
    """A context with one workflow of `members`, reacting to `Go`."""
    return f"""context Refused {{
  aggregate Thing {{ tag: string }}
  event Go {{ thing: Thing id }}
  workflow W {{ {members} }}
}}
"""


def _effects(case: Case, thing: str) -> list[str]:
    lines = [
        f"let t = Things.getById({thing})",
        "t.hit()",
        f'emit {case.done} {{ thing: {thing}, by: "{case.name}" }}',
    ]
    if case.stateful and case.kind != "eventSourced":  # event-sourced: `apply` folds the Done
        lines.append("n := n + 1")
    return lines


def _block(head: str, lines: list[str]) -> list[str]:
    return [f"    {head} {{", *(f"      {line}" for line in lines), "    }"]


def _workflow(case: Case) -> list[str]:
    mark = " eventSourced" if case.kind == "eventSourced" else ""
    out = [f"  workflow {case.workflow}{mark} {{"]
    if case.stateful:
        out += ["    thing: Thing id", "    n: int = 0"]
    arm = ["schedule later after " + NEVER] if case.kind == "process" else []
    if case.trigger == "command":
        out += _block("create(thing: Thing id)", _effects(case, "thing") + arm)
    elif case.trigger == "starter":
        by = " by e.thing" if case.stateful else ""
        out += _block(f"create(e: {case.event_ref}){by}", _effects(case, "e.thing") + arm)
    elif case.trigger == "on":
        by = " by e.thing" if case.stateful else ""
        if case.stateful:  # an `on` reaches an instance that exists: a command starts it
            out += _block("create(thing: Thing id)", arm)
        out += _block(f"on(e: {case.event_ref}){by}", _effects(case, "e.thing"))
    else:  # a timeout: armed by a starter, its handler does the work and ends the instance
        due = SOON if case.trigger == "timeout@clock" else NEVER
        out += _block(f"create(e: {case.event_ref}) by e.thing", [f"schedule due after {due}"])
        out += _block("on timeout due", [*_effects(case, "thing"), "complete"])
    if case.kind == "process" and case.trigger in ("command", "starter", "on"):
        out += ["    on timeout later { }"]
    if case.kind == "eventSourced":
        out += [f"    apply(e: {case.done}) {{ n := n + 1 }}"]
    return [*out, "  }"]


def model_text() -> str:
    """The whole model: one context, every case's workflow, trigger event and operation."""
    evented = [c for c in CASES if c.kind != "timer" and c.by_event and not c.far]
    durable = [c.event for c in evented if c.path == "durable"]
    ops = [f"    operation {c.operation}() {{ emit {c.event} {{ thing: id }} }}" for c in evented]
    far = [c for c in CASES if c.far]
    lines = [
        "// Generated by tests/e2e/reaction_matrix.py: every accepted reaction form, served by",
        "// tests/e2e/test_reaction_matrix.py. Do not edit: change the generator.",
        "context Matrix {",
        "  aggregate Thing with crudish {",
        "    tag: string",
        '    sweep: string = ""   // "D" or "L": the timer case whose sweep hits it',
        "    hits: int = 0",
        "    internal operation hit() { hits += 1 }",
        *ops,
        "  }",
        "  repository Things for Thing { }",
        '  criterion Unswept of Thing = sweep != "" && hits == 0',
        "",
        "  event DoneD { thing: Thing id, by: string }",
        "  event DoneL { thing: Thing id, by: string }",
        *(f"  event {c.event} {{ thing: Thing id }}" for c in evented),
        "  channel Durable {",
        f"    carries: {', '.join(['DoneD', *durable])}",
        "    maxAttempts: 3",
        "    backoff: 1s .. 1s",
        "  }",
        "",
        "  projection Seen {",
        "    thing: Thing id",
        "    count: int = 0",
        '    last: string = ""',
        "    on(e: DoneD) by e.thing { count += 1  last := e.by }",
        "    on(e: DoneL) by e.thing { count += 1  last := e.by }",
        "  }",
        "  projection Keyed {  // keyed by its body's first assignment of the key, not `by`",
        "    thing: Thing id",
        "    count: int = 0",
        "    on(e: DoneD) { thing := e.thing  count += 1 }",
        "    on(e: DoneL) { thing := e.thing  count += 1 }",
        "  }",
        "",
        "  timer sweep every 1h {",
        "    let due = Things.findAll(Unswept)",
        "    for t in due {",
        "      t.hit()",
        '      if t.sweep == "D" { emit DoneD { thing: t.id, by: t.tag } }',
        "      else { emit DoneL { thing: t.id, by: t.tag } }",
        "    }",
        "  }",
    ]
    for case in CASES:
        if case.kind != "timer":
            lines += ["", *_workflow(case)]
    lines += [
        "}",
        "",
        "// Raises the events the Matrix workflows react to by their qualified names.",
        "context Far {",
        "  aggregate Bell with crudish {",
        "    thing: Matrix.Thing id",
        *(f"    operation {c.operation}() {{ emit {c.event} {{ thing: thing }} }}" for c in far),
        "  }",
        *(f"  event {c.event} {{ thing: Matrix.Thing id }}" for c in far),
        "  channel Rings {",
        f"    carries: {', '.join(c.event for c in far if c.path == 'durable')}",
        "  }",
    ]
    return "\n".join([*lines, "}", ""])
