"""Hand-built IR of examples/banking/banking.loom, for testing the back end independently of the
front end (and as a fallback while `loom.lang.compile_files` is not available)."""

from __future__ import annotations

from typing import Literal

from loom.model import ir

F = "examples/banking/banking.loom"
CTX = "Banking"


def o(line: int, col: int = 3) -> ir.Origin:
    return ir.Origin(F, line, col)


def ev_field(name: str, t: ir.Type, line: int = 1) -> ir.Field:
    """A field of an event (no default, not renamed)."""
    return ir.Field(name, t, None, False, o(line))


INT, STR, BOOL, DEC, DT = ir.INT, ir.STRING, ir.BOOL, ir.DECIMAL, ir.DATETIME
ACC_ID = ir.IdType("Account", CTX)
CUS_ID = ir.IdType("Customer", CTX)
KIND = ir.EnumType("AccountKind", CTX)


def lit(v: str | int | bool, t: ir.Type = INT) -> ir.Literal_:
    return ir.Literal_(
        v, t, str(v).lower() if isinstance(v, bool) else (f'"{v}"' if t == STR else str(v))
    )


def sf(name: str, t: ir.Type, kind: Literal["field", "id"] = "field") -> ir.SelfField:
    return ir.SelfField(name, t, name, kind)


def par(name: str, t: ir.Type) -> ir.Param:
    return ir.Param(name, t, name)


def loc(name: str, t: ir.Type) -> ir.Local:
    return ir.Local(name, t, name)


# the operators the banking model uses (a subset of ir.Binary's)
def bin_(
    op: Literal["+", "==", "!=", "<", ">", ">="], left: ir.Expr, right: ir.Expr, t: ir.Type
) -> ir.Binary:
    return ir.Binary(op, left, right, t, f"{left.text} {op} {right.text}")


def fee_call(arg: ir.Expr) -> ir.FunctionCall:
    return ir.FunctionCall("fee", (arg,), INT, f"fee({arg.text})")


def _account() -> ir.Aggregate:
    amount = par("amount", INT)
    withdraw = ir.Operation(
        "withdraw",
        (ir.Parameter("amount", INT),),
        None,
        (
            ir.Precondition(bin_(">", amount, lit(0), BOOL), "amount must be positive", o(27, 7)),
            ir.Precondition(
                bin_(">=", sf("balance", INT), bin_("+", amount, fee_call(amount), INT), BOOL),
                "insufficient funds",
                o(28, 7),
            ),
            ir.Assign("balance", "-=", bin_("+", amount, fee_call(amount), INT), o(29, 7)),
            ir.Emit(
                "MoneyWithdrawn",
                CTX,
                (("account", sf("id", ACC_ID, "id")), ("amount", amount)),
                o(30, 7),
            ),
        ),
        o(26, 5),
        ("MoneyWithdrawn",),
    )
    not_frozen = ir.Unary("!", sf("frozen", BOOL), BOOL, "!frozen")
    deposit = ir.Operation(
        "deposit",
        (ir.Parameter("amount", INT),),
        not_frozen,
        (
            ir.Precondition(bin_(">", amount, lit(0), BOOL), "amount must be positive", o(35, 7)),
            ir.Assign("balance", "+=", amount, o(36, 7)),
            ir.Emit(
                "MoneyDeposited",
                CTX,
                (("account", sf("id", ACC_ID, "id")), ("amount", amount)),
                o(37, 7),
            ),
        ),
        o(34, 5),
        ("MoneyDeposited",),
    )
    freeze = ir.Operation(
        "freeze", (), None, (ir.Assign("frozen", ":=", lit(True, BOOL), o(41, 7)),), o(40, 5)
    )
    label = loc("label", STR)
    close = ir.Operation(
        "close",
        (),
        bin_("==", sf("balance", INT), lit(0), BOOL),
        (
            ir.Let("label", lit("closed", STR), o(45, 7)),
            ir.Assign(
                "tags", ":=", ir.ListLiteral((label,), ir.ListType(STR), "[label]"), o(46, 7)
            ),
        ),
        o(44, 5),
    )
    savings = ir.EnumMember("AccountKind", "Savings", KIND, "Savings")
    return ir.Aggregate(
        "Account",
        CTX,
        (
            ir.Field("owner", CUS_ID, None, False, o(13, 5)),
            ir.Field("number", STR, None, False, o(14, 5)),
            ir.Field("balance", INT, None, False, o(15, 5)),
            ir.Field(
                "kind",
                KIND,
                ir.EnumMember("AccountKind", "Checking", KIND, "Checking"),
                False,
                o(16, 5),
            ),
            ir.Field("openedAt", DT, ir.Now(DT, "now()"), False, o(17, 5)),
            ir.Field(
                "tags",
                ir.ListType(STR),
                ir.ListLiteral((), ir.ListType(STR), "[]"),
                False,
                o(18, 5),
            ),
            ir.Field("frozen", BOOL, lit(False, BOOL), False, o(19, 5)),
        ),
        (ir.Derived("overdrawn", BOOL, bin_("<", sf("balance", INT), lit(0), BOOL), o(21, 5)),),
        (
            ir.Invariant(
                bin_(">=", sf("balance", INT), lit(0), BOOL),
                "an account never goes below zero",
                o(22, 5),
            ),
        ),
        (
            ir.Function(
                "fee",
                (ir.Parameter("amount", INT),),
                INT,
                ir.Conditional(
                    bin_("==", sf("kind", KIND), savings, BOOL),
                    lit(1),
                    lit(0),
                    INT,
                    "kind == Savings ? 1 : 0",
                ),
                o(24, 5),
            ),
        ),
        (withdraw, deposit, freeze, close),
        o(12, 3),
    )


def _customer() -> ir.Aggregate:
    return ir.Aggregate(
        "Customer",
        CTX,
        (
            ir.Field("name", STR, None, False, o(8, 5)),
            ir.Field("email", ir.OptionalType(STR), None, False, o(9, 5)),
        ),
        (),
        (),
        (),
        (),
        o(7, 3),
    )


def _transfer_body(
    create_line: int, *, emit: bool, result: bool, precondition: str | None
) -> tuple[ir.Stmt, ...]:
    acc_t = ir.AggregateType("Account", CTX)
    base = create_line + (2 if precondition else 1)
    stmts: list[ir.Stmt] = []
    if precondition:
        stmts.append(
            ir.Precondition(
                bin_("!=", par("fromAccount", ACC_ID), par("toAccount", ACC_ID), BOOL),
                precondition,
                o(create_line + 1, 7),
            )
        )
    stmts += [
        ir.LoadById("source", "Accounts", "Account", par("fromAccount", ACC_ID), o(base, 7)),
        ir.LoadById("target", "Accounts", "Account", par("toAccount", ACC_ID), o(base + 1, 7)),
        ir.CallOperation("source", "Account", "withdraw", (par("amount", INT),), o(base + 2, 7)),
        ir.CallOperation("target", "Account", "deposit", (par("amount", INT),), o(base + 3, 7)),
    ]
    if emit:
        stmts.append(
            ir.Emit(
                "TransferMade",
                CTX,
                (
                    ("from", par("fromAccount", ACC_ID)),
                    ("to", par("toAccount", ACC_ID)),
                    ("amount", par("amount", INT)),
                ),
                o(base + 4, 7),
            )
        )
    if result:
        stmts.append(
            ir.Return(
                ir.Member(loc("source", acc_t), "balance", INT, "source.balance"), o(base + 5, 7)
            )
        )
    stmts += [
        ir.Save("source", "Accounts", "Account", False),
        ir.Save("target", "Accounts", "Account", False),
    ]
    return tuple(stmts)


TRANSFER_PARAMS = (
    ir.Parameter("fromAccount", ACC_ID),
    ir.Parameter("toAccount", ACC_ID),
    ir.Parameter("amount", INT),
)


def _workflows() -> tuple[ir.Workflow, ...]:
    cus_t = ir.AggregateType("Customer", CTX)
    acc_t = ir.AggregateType("Account", CTX)
    register = ir.Workflow(
        "registerCustomer",
        CTX,
        False,
        None,
        (
            ir.WorkflowCreate(
                (ir.Parameter("name", STR), ir.Parameter("email", ir.OptionalType(STR))),
                CUS_ID,
                (
                    ir.CreateAggregate(
                        "customer",
                        "Customer",
                        (("name", par("name", STR)), ("email", par("email", ir.OptionalType(STR)))),
                        o(59, 7),
                    ),
                    ir.Return(
                        ir.Member(loc("customer", cus_t), "id", CUS_ID, "customer.id", "id"),
                        o(60, 7),
                    ),
                    ir.Save("customer", "Customers", "Customer", True),
                ),
                o(58, 5),
            ),
        ),
        o(57, 3),
    )
    open_account = ir.Workflow(
        "openAccount",
        CTX,
        False,
        None,
        (
            ir.WorkflowCreate(
                (ir.Parameter("owner", CUS_ID), ir.Parameter("number", STR)),
                ACC_ID,
                (
                    ir.LoadById(
                        "customer", "Customers", "Customer", par("owner", CUS_ID), o(66, 7)
                    ),
                    ir.CreateAggregate(
                        "account",
                        "Account",
                        (
                            ("owner", par("owner", CUS_ID)),
                            ("number", par("number", STR)),
                            ("balance", lit(0)),
                            ("kind", ir.EnumMember("AccountKind", "Checking", KIND, "Checking")),
                            ("openedAt", ir.Now(DT, "now()")),
                            ("tags", ir.ListLiteral((), ir.ListType(STR), "[]")),
                            ("frozen", lit(False, BOOL)),
                        ),
                        o(67, 7),
                    ),
                    ir.Return(
                        ir.Member(loc("account", acc_t), "id", ACC_ID, "account.id", "id"), o(68, 7)
                    ),
                    ir.Save("account", "Accounts", "Account", True),
                ),
                o(65, 5),
            ),
        ),
        o(64, 3),
    )
    transfer = ir.Workflow(
        "transfer",
        CTX,
        True,
        None,
        (
            ir.WorkflowCreate(
                TRANSFER_PARAMS,
                INT,
                _transfer_body(74, emit=True, result=True, precondition=None),
                o(74, 5),
            ),
        ),
        o(73, 3),
    )
    loose = ir.Workflow(
        "looseTransfer",
        CTX,
        False,
        None,
        (
            ir.WorkflowCreate(
                TRANSFER_PARAMS,
                None,
                _transfer_body(86, emit=False, result=False, precondition=None),
                o(86, 5),
            ),
        ),
        o(85, 3),
    )
    audited = ir.Workflow(
        "auditedTransfer",
        CTX,
        True,
        "serializable",
        (
            ir.WorkflowCreate(
                TRANSFER_PARAMS,
                None,
                _transfer_body(
                    95, emit=False, result=False, precondition="a transfer needs two accounts"
                ),
                o(95, 5),
            ),
        ),
        o(94, 3),
    )
    return (register, open_account, transfer, loose, audited)


def banking_model() -> ir.Model:
    ctx = ir.Context(
        CTX,
        (ir.Enum("AccountKind", ("Checking", "Savings"), o(5)),),
        (_customer(), _account()),
        (
            ir.Repository("Customers", "Customer", o(50)),
            ir.Repository("Accounts", "Account", o(51)),
        ),
        (
            ir.Event(
                "MoneyWithdrawn",
                CTX,
                (ev_field("account", ACC_ID), ev_field("amount", INT)),
                o(53),
            ),
            ir.Event(
                "MoneyDeposited",
                CTX,
                (ev_field("account", ACC_ID), ev_field("amount", INT)),
                o(54),
            ),
            ir.Event(
                "TransferMade",
                CTX,
                (
                    ev_field("from", ACC_ID),
                    ev_field("to", ACC_ID),
                    ev_field("amount", INT),
                ),
                o(55),
            ),
        ),
        _workflows(),
        ir.Origin(F, 3, 1),
    )
    return ir.Model((ctx,), (F,))
