"""A hand-built IR with the awkward cases: keyword names, decimals mixed with ints, optional and
list fields, a date, an aggregate without a repository, a workflow without parameters, a decimal
result, a pinned isolation level, and a second context that refers to the first one's ids."""

from __future__ import annotations

from loom.model import ir

CAT, SHIP = "Catalog", "Shipping"
DEC, INT, STR, BOOL = ir.DECIMAL, ir.INT, ir.STRING, ir.BOOL
COLOR = ir.EnumType("Color", CAT)
BOX_ID = ir.IdType("Box", CAT)
PARCEL_ID = ir.IdType("Parcel", SHIP)


def o(line: int, file: str = "catalog.loom") -> ir.Origin:
    return ir.Origin(file, line, 3)


def ev_field(name: str, t: ir.Type, line: int = 1) -> ir.Field:
    """A field of an event (no default, not renamed)."""
    return ir.Field(name, t, None, False, o(line))


def sf(name: str, t: ir.Type, kind: str = "field") -> ir.SelfField:
    return ir.SelfField(name, t, name, kind)  # type: ignore[arg-type]


def catalog() -> ir.Context:
    price = sf("price", DEC)
    box = ir.Aggregate(
        "Box",
        CAT,
        (
            ir.Field("from", STR, None, False, o(5)),
            ir.Field("price", DEC, ir.Literal_("0.00", DEC, "0.00"), False, o(6)),
            ir.Field(
                "colors",
                ir.ListType(COLOR),
                ir.ListLiteral((), ir.ListType(COLOR), "[]"),
                False,
                o(7),
            ),
            ir.Field("shipBy", ir.OptionalType(ir.DATE), None, False, o(8)),
            ir.Field("weight", ir.OptionalType(INT), None, False, o(9)),
        ),
        (
            ir.Derived(
                "total",
                DEC,
                ir.Binary("*", price, ir.Literal_(2, INT, "2"), DEC, "price * 2"),
                o(10),
            ),
        ),
        (
            ir.Invariant(
                ir.Binary(">=", price, ir.Literal_(0, INT, "0"), BOOL, "price >= 0"), None, o(11)
            ),
        ),
        (),
        (
            ir.Operation(
                "reprice",
                (ir.Parameter("class", DEC),),
                None,
                (
                    ir.Let("old", price, o(13)),
                    ir.Assign("price", ":=", ir.Param("class", DEC, "class"), o(14)),
                    ir.Emit(
                        "Repriced",
                        CAT,
                        (("box", sf("id", BOX_ID, "id")), ("from", sf("from", STR))),
                        o(15),
                    ),
                ),
                o(12),
            ),
            ir.Operation("touch", (), None, (), o(17)),
        ),
        o(4),
    )
    ping = ir.Workflow("ping", CAT, False, None, (ir.WorkflowCreate((), None, (), o(21)),), o(20))
    b_t = ir.AggregateType("Box", CAT)
    make = ir.Workflow(
        "makeBox",
        CAT,
        True,
        "read_committed",
        (
            ir.WorkflowCreate(
                (ir.Parameter("from", STR), ir.Parameter("price", DEC)),
                DEC,
                (
                    ir.CreateAggregate(
                        "b",
                        "Box",
                        (
                            ("from", ir.Param("from", STR, "from")),
                            ("price", ir.Param("price", DEC, "price")),
                            ("colors", ir.ListLiteral((), ir.ListType(COLOR), "[]")),
                            ("shipBy", None),
                            ("weight", None),
                        ),
                        o(24),
                    ),
                    ir.Return(
                        ir.Member(ir.Local("b", b_t, "b"), "total", DEC, "b.total", "derived"),
                        o(25),
                    ),
                    ir.Save("b", "BoxRepository", "Box", True),
                ),
                o(23),
            ),
        ),
        o(22),
    )
    return ir.Context(
        CAT,
        (ir.Enum("Color", ("Red", "DarkBlue"), o(2)),),
        (box,),
        (),
        (ir.Event("Repriced", CAT, (ev_field("box", BOX_ID), ev_field("from", STR)), o(19)),),
        (ping, make),
        o(1),
    )


def shipping() -> ir.Context:
    f = "shipping.loom"
    label = ir.Binary(
        "+", ir.Literal_("x", STR, '"x"'), ir.Literal_("y", STR, '"y"'), STR, '"x" + "y"'
    )
    parcel = ir.Aggregate(
        "Parcel",
        SHIP,
        (
            ir.Field("box", BOX_ID, None, True, o(3, f)),
            ir.Field("label", STR, label, False, o(4, f)),
        ),
        (),
        (),
        (),
        (),
        o(2, f),
    )
    p_t = ir.AggregateType("Parcel", SHIP)
    ship = ir.Workflow(
        "ship",
        SHIP,
        False,
        None,
        (
            ir.WorkflowCreate(
                (ir.Parameter("box", BOX_ID),),
                PARCEL_ID,
                (
                    ir.CreateAggregate(
                        "parcel",
                        "Parcel",
                        (("box", ir.Param("box", BOX_ID, "box")), ("label", label)),
                        o(8, f),
                    ),
                    ir.Return(
                        ir.Member(
                            ir.Local("parcel", p_t, "parcel"), "id", PARCEL_ID, "parcel.id", "id"
                        ),
                        o(9, f),
                    ),
                    ir.Save("parcel", "Parcels", "Parcel", True),
                ),
                o(7, f),
            ),
        ),
        o(6, f),
    )
    return ir.Context(
        SHIP, (), (parcel,), (ir.Repository("Parcels", "Parcel", o(5, f)),), (), (ship,), o(1, f)
    )


def edge_model() -> ir.Model:
    return ir.Model((catalog(), shipping()), ("catalog.loom", "shipping.loom"))
