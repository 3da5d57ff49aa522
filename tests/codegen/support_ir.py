"""Hand-built IR of a `Support` context using the workflow language (issue 3): natural keys,
criteria, retrievals, declared finds, `if let`, `for`, `notFound`, delete, crudish routes, a declared
factory, immutable and private members, command/query handlers, workflow functions and state.

Used until the front end lowers these constructs (then `tests/lang/data/ok/` models take over)."""

from __future__ import annotations

from loom.model import ir

F = "support.loom"
CTX = "Support"
INT, STR, BOOL, DEC, DT = ir.INT, ir.STRING, ir.BOOL, ir.DECIMAL, ir.DATETIME
STATUS = ir.EnumType("Status", CTX)
TID = ir.IdType("Ticket", CTX)
TICKET = ir.AggregateType("Ticket", CTX)
TICKETS = ir.ListType(TICKET)


def o(line: int) -> ir.Origin:
    return ir.Origin(F, line, 3)


def ev_field(name: str, t: ir.Type, line: int = 1) -> ir.Field:
    """A field of an event (no default, not renamed)."""
    return ir.Field(name, t, None, False, o(line))


def lit(v: object, t: ir.Type = INT) -> ir.Literal_:
    return ir.Literal_(v, t, f'"{v}"' if t == STR else str(v))  # type: ignore[arg-type]


def sf(name: str, t: ir.Type, kind: str = "field") -> ir.SelfField:
    return ir.SelfField(name, t, name, kind)  # type: ignore[arg-type]


def par(name: str, t: ir.Type) -> ir.Param:
    return ir.Param(name, t, name)


def loc(name: str, t: ir.Type) -> ir.Local:
    return ir.Local(name, t, name)


def b(op: str, left: ir.Expr, right: ir.Expr, t: ir.Type = BOOL) -> ir.Binary:
    return ir.Binary(op, left, right, t, f"{left.text} {op} {right.text}")  # type: ignore[arg-type]


def em(member: str) -> ir.EnumMember:
    return ir.EnumMember("Status", member, STATUS, member)


def p(name: str, t: ir.Type) -> ir.Parameter:
    return ir.Parameter(name, t)


def is_open() -> ir.Binary:
    return b("==", sf("status", STATUS), em("Open"))


def ticket() -> ir.Aggregate:
    fields = (
        ir.Field("code", STR, None, True, o(4)),
        ir.Field("customer", STR, None, False, o(5)),
        ir.Field("status", STATUS, em("Open"), False, o(6)),
        ir.Field("dueAt", DT, None, False, o(7)),
        ir.Field("price", DEC, lit("0", DEC), False, o(8)),
    )
    ops: tuple[ir.Operation, ...] = (
        ir.Operation(
            "flagBreached",
            (),
            is_open(),
            (ir.Assign("status", ":=", em("Breached"), o(11)),),
            o(11),
        ),
        ir.Operation(
            "escalate", (), None, (ir.Assign("status", ":=", em("Breached"), o(12)),), o(12)
        ),
        ir.Operation("close", (), None, (ir.Assign("status", ":=", em("Closed"), o(13)),), o(13)),
    )
    ops += (
        # private: no route
        ir.Operation(
            "touch",
            (),
            None,
            (ir.Assign("status", ":=", sf("status", STATUS), o(14)),),
            o(14),
            private=True,
        ),
    )
    factory = ir.Factory(
        (p("code", STR), p("customer", STR), p("dueAt", DT), p("price", DEC)),
        (
            ir.Precondition(
                b("!=", par("code", STR), lit("", STR)), "a ticket needs a code", o(31)
            ),
            ir.Assign("code", ":=", par("code", STR), o(32)),
            ir.Assign("customer", ":=", par("customer", STR), o(33)),
            ir.Assign("dueAt", ":=", par("dueAt", DT), o(34)),
            ir.Let("p", b("*", par("price", DEC), lit(1), DEC), o(35)),
            ir.Assign("price", ":=", loc("p", DEC), o(36)),
            ir.Emit(
                "TicketOpened",
                CTX,
                (("ticket", sf("id", TID, "id")), ("code", sf("code", STR))),
                o(37),
            ),
        ),
        o(30),
    )
    slack = ir.Function(
        "slack",
        (p("asOf", DT),),
        BOOL,
        None,
        o(18),
        body=(
            ir.Let("late", b("<", sf("dueAt", DT), par("asOf", DT)), o(18)),
            ir.Return(ir.Unary("!", loc("late", BOOL), BOOL, "!late"), o(18)),
        ),
    )
    return ir.Aggregate(
        "Ticket",
        CTX,
        fields,
        (),
        (),
        (slack,),
        ops,
        o(3),
        crudish=True,
        factory=factory,
        unique=(("code",),),
    )


def note() -> ir.Aggregate:
    fields = (
        ir.Field("ticket", TID, None, True, o(91)),
        ir.Field("text", STR, None, False, o(92)),
        ir.Field("pinned", BOOL, lit(False, BOOL), False, o(93)),
        ir.Field("weight", ir.OptionalType(INT), None, False, o(94)),
        ir.Field("createdAt", DT, ir.Now(DT, "now()"), True, o(95)),
        ir.Field(
            "tags", ir.ListType(STR), ir.ListLiteral((), ir.ListType(STR), "[]"), False, o(96)
        ),
    )
    inv = ir.Invariant(b("!=", sf("text", STR), lit("", STR)), "a note needs text", o(97))
    return ir.Aggregate("Note", CTX, fields, (), (inv,), (), (), o(90), crudish=True)


def criteria() -> tuple[ir.Criterion, ...]:
    return (
        ir.Criterion(
            "DueOpen",
            "Ticket",
            (p("asOf", DT),),
            b("&&", b("<", sf("dueAt", DT), par("asOf", DT)), is_open()),
            o(20),
        ),
        ir.Criterion(
            "OpenFor",
            "Ticket",
            (p("c", STR),),
            b("&&", b("==", sf("customer", STR), par("c", STR)), is_open()),
            o(21),
        ),
        ir.Criterion(
            "DueBefore", "Ticket", (p("asOf", DT),), b("<", sf("dueAt", DT), par("asOf", DT)), o(22)
        ),
        ir.Criterion(
            "PricedOver",
            "Ticket",
            (p("min", DEC),),
            b(">", sf("price", DEC), par("min", DEC)),
            o(23),
        ),
        # a column on the right, an int literal against a decimal, no parameters
        ir.Criterion("Pricey", "Ticket", (), b("<=", lit(10), sf("price", DEC)), o(24)),
        ir.Criterion(
            "NotClosedOrCheap",
            "Ticket",
            (),
            b(
                "||",
                ir.Unary(
                    "!", b("==", sf("status", STATUS), em("Closed")), BOOL, "!(status == Closed)"
                ),
                b("<", sf("price", DEC), b("+", lit(1), lit("0.5", DEC), DEC)),
            ),
            o(25),
        ),
    )


def retrievals() -> tuple[ir.Retrieval, ...]:
    return (
        ir.Retrieval("Due", "Ticket", (p("asOf", DT),), "DueOpen", (par("asOf", DT),), o(27)),
        ir.Retrieval(
            "Expensive", "Ticket", (p("min", DEC),), "PricedOver", (par("min", DEC),), o(28)
        ),
    )


def read(
    kind: str,
    card: str,
    args: tuple[tuple[str, ir.Expr], ...],
    target: str | None = None,
    key: tuple[str, ...] = (),
) -> ir.Read:
    return ir.Read("Tickets", "Ticket", kind, card, args, target, key)  # type: ignore[arg-type]


def save(name: str) -> ir.Save:
    return ir.Save(name, "Tickets", "Ticket", False)


def wf(
    name: str,
    line: int,
    params: tuple[ir.Parameter, ...],
    body: tuple[ir.Stmt, ...],
    result: ir.Type | None = None,
    transactional: bool = False,
) -> ir.Workflow:
    return ir.Workflow(
        name,
        CTX,
        transactional,
        None,
        (ir.WorkflowCreate(params, result, body, o(line + 1)),),
        o(line),
    )


def workflows() -> tuple[ir.Workflow, ...]:
    t = loc("t", TICKET)
    open_ticket = wf(
        "openTicket",
        40,
        (p("code", STR), p("customer", STR), p("dueAt", DT), p("price", DEC)),
        (
            ir.CreateAggregate(
                "t",
                "Ticket",
                (
                    ("code", par("code", STR)),
                    ("customer", par("customer", STR)),
                    ("dueAt", par("dueAt", DT)),
                    ("price", par("price", DEC)),
                ),
                o(42),
            ),
            ir.Return(ir.Member(t, "id", TID, "t.id", "id"), o(43)),
            ir.Save("t", "Tickets", "Ticket", True),
        ),
        TID,
    )

    def sweep(name: str, line: int, criterion: str, transactional: bool) -> ir.Workflow:
        return wf(
            name,
            line,
            (p("asOf", DT),),
            (
                ir.Load(
                    "due",
                    read("criterion", "many", (("asOf", par("asOf", DT)),), criterion),
                    o(line + 2),
                ),
                ir.ForEach(
                    "t",
                    loc("due", TICKETS),
                    (ir.CallOperation("t", "Ticket", "flagBreached", (), o(line + 3)), save("t")),
                    o(line + 3),
                ),
            ),
            transactional=transactional,
        )

    by_code = (("code", par("code", STR)),)
    escalate_by_code = wf(
        "escalateByCode",
        60,
        (p("code", STR),),
        (
            ir.IfLet(
                "t",
                read("by_key", "optional", by_code, key=("code",)),
                (ir.CallOperation("t", "Ticket", "escalate", (), o(62)), save("t")),
                (ir.NotFoundStmt(None, "Ticket", o(63)),),
                o(61),
            ),
        ),
    )
    close_by_code = wf(
        "closeByCode",
        65,
        (p("code", STR),),
        (
            ir.Load("t", read("by_key", "one", by_code, key=("code",)), o(66)),
            ir.CallOperation("t", "Ticket", "close", (), o(67)),
            save("t"),
        ),
        transactional=True,
    )
    escalate_open = wf(
        "escalateOpen",
        70,
        (p("customer", STR),),
        (
            ir.IfLet(
                "t",
                read("criterion", "optional", (("c", par("customer", STR)),), "OpenFor"),
                (ir.CallOperation("t", "Ticket", "escalate", (), o(72)), save("t")),
                (ir.NotFoundStmt("no open ticket", None, o(73)),),
                o(71),
            ),
        ),
    )
    remove = wf(
        "removeTicket",
        75,
        (p("code", STR),),
        (
            ir.IfLet(
                "t",
                read("find", "optional", by_code, "byCode"),
                (ir.Delete("t", "Tickets", "Ticket", o(77)),),
                (ir.NotFoundStmt(None, "Ticket", o(78)),),
                o(76),
            ),
        ),
    )
    close_all = wf(
        "closeAllFor",
        80,
        (p("customer", STR),),
        (
            ir.Load(
                "all",
                read("find", "many", (("customer", par("customer", STR)),), "byCustomer"),
                o(81),
            ),
            ir.ForEach(
                "x",
                loc("all", TICKETS),
                (ir.CallOperation("x", "Ticket", "close", (), o(82)), save("x")),
                o(82),
            ),
        ),
    )
    return (
        open_ticket,
        sweep("sweep", 50, "DueOpen", True),
        sweep("strictSweep", 53, "DueBefore", True),
        sweep("looseSweep", 56, "DueBefore", False),
        escalate_by_code,
        close_by_code,
        escalate_open,
        remove,
        close_all,
    )


def handlers() -> tuple[ir.Handler, ...]:
    t = loc("t", TICKET)
    by_code = (("code", par("code", STR)),)
    escalate = ir.Handler(
        "command",
        "EscalateOpen",
        CTX,
        (p("customer", STR),),
        None,
        (
            ir.IfLet(
                "t",
                read("criterion", "optional", (("c", par("customer", STR)),), "OpenFor"),
                (ir.CallOperation("t", "Ticket", "escalate", (), o(101)), save("t")),
                (ir.NotFoundStmt("no open ticket", None, o(102)),),
                o(101),
            ),
        ),
        o(100),
    )
    close = ir.Handler(
        "command",
        "CloseCode",
        CTX,
        (p("code", STR),),
        TID,
        (
            ir.Load("t", read("by_key", "one", by_code, key=("code",)), o(105)),
            ir.CallOperation("t", "Ticket", "close", (), o(106)),
            ir.Return(ir.Member(t, "id", TID, "t.id", "id"), o(107)),
            save("t"),
        ),
        o(104),
        transactional=True,
        isolation="serializable",
    )
    due = ir.Handler(
        "query",
        "DueTickets",
        CTX,
        (p("asOf", DT),),
        TICKETS,
        (
            ir.Load("due", read("retrieval", "many", (("asOf", par("asOf", DT)),), "Due"), o(110)),
            ir.Return(loc("due", TICKETS), o(111)),
        ),
        o(109),
    )
    by_code_q = ir.Handler(
        "query",
        "TicketByCode",
        CTX,
        (p("code", STR),),
        ir.OptionalType(TICKET),
        (
            ir.IfLet(
                "t",
                read("by_key", "optional", by_code, key=("code",)),
                (ir.Return(t, o(114)),),
                (),
                o(114),
            ),
        ),
        o(113),
    )
    slack = ir.Handler(
        "query",
        "Slack",
        CTX,
        (
            p("code", STR),
            p("asOf", DT),
            p("tags", ir.ListType(STR)),
            p("limit", ir.OptionalType(INT)),
        ),
        BOOL,
        (
            ir.Load("t", read("by_key", "one", by_code, key=("code",)), o(117)),
            ir.Return(
                b(
                    "&&",
                    ir.FunctionCall(
                        "slack",
                        (par("asOf", DT),),
                        BOOL,
                        "t.slack(asOf)",
                        receiver=t,
                        aggregate="Ticket",
                    ),
                    b("==", par("limit", ir.OptionalType(INT)), lit(None)),
                ),
                o(118),
            ),
        ),
        o(116),
    )
    return (escalate, close, due, by_code_q, slack)


def rate_workflow() -> ir.Workflow:
    prio = par("priority", INT)
    sla = ir.Function(
        "slaDays",
        (p("priority", INT),),
        INT,
        ir.Conditional(b(">", prio, lit(5)), lit(1), lit(5), INT, "priority > 5 ? 1 : 5"),
        o(121),
    )
    x = par("x", INT)
    double = ir.Function(
        "double",
        (p("x", INT),),
        INT,
        None,
        o(122),
        body=(
            ir.Let("y", b("*", x, lit(2), INT), o(122)),
            ir.Precondition(b(">=", loc("y", INT), lit(0)), None, o(122)),
            ir.Return(loc("y", INT), o(122)),
        ),
    )

    def wcall(fn: str, arg: ir.Expr) -> ir.FunctionCall:
        return ir.FunctionCall(
            fn, (arg,), INT, f"{fn}({arg.text})", owner="workflow", workflow="rate"
        )

    create = ir.WorkflowCreate(
        (p("priority", INT),),
        INT,
        (ir.Return(wcall("double", wcall("slaDays", prio)), o(124)),),
        o(123),
    )
    return ir.Workflow("rate", CTX, False, None, (create,), o(120), functions=(sla, double))


def support_context() -> ir.Context:
    repo = ir.Repository(
        "Tickets",
        "Ticket",
        o(15),
        finds=(
            ir.RepositoryFind("byCode", (p("code", STR),), ("code",), "optional", o(16)),
            ir.RepositoryFind("byCustomer", (p("customer", STR),), ("customer",), "many", o(17)),
        ),
    )
    return ir.Context(
        CTX,
        (ir.Enum("Status", ("Open", "Breached", "Closed"), o(2)),),
        (ticket(), note()),
        (repo,),
        (ir.Event("TicketOpened", CTX, (ev_field("ticket", TID), ev_field("code", STR)), o(38)),),
        (*workflows(), rate_workflow()),
        o(1),
        criteria=criteria(),
        retrievals=retrievals(),
        handlers=handlers(),
    )


def support_model() -> ir.Model:
    return ir.Model((support_context(),), (F,))
