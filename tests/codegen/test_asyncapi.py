"""The AsyncAPI document of a generated service (`loom.codegen.python.asyncapi`): its channels,
operations and messages for the shop example and a subset of its contexts, a model without
channels, and every field type (tests/e2e/models/contract.loom), whose payload schemas are checked
against the generated service's OpenAPI and against events encoded by `loom.runtime.values.codec`.

No maintained PyPI package ships the AsyncAPI 3.0.0 JSON schema (the official one is only in the
npm package @asyncapi/specs), so the document's validity is checked structurally here: every
`$ref` resolves, every key matches the spec's component-name pattern, every operation's messages
are messages of its own channel. tests/e2e/test_asyncapi.py checks the document the service
serves and the payloads the outbox really holds.
"""

from __future__ import annotations

import importlib
import json
import re
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from loom.codegen.python import generate
from loom.codegen.python.asyncapi import asyncapi_document, asyncapi_text
from loom.lang import compile_files, compile_sources
from loom.model import ir
from loom.runtime.values.codec import decode, encode
from tests.asyncapi_schema import payload_validator
from tests.codegen.util import ROOT, import_generated, write_tree

SHOP = "examples/shop/shop.loom"
CONTRACT = "tests/e2e/models/contract.loom"
BANKING = "examples/banking/banking.loom"
# the spec's pattern for the keys of channels, operations and components
KEY = re.compile(r"^[\w\d.\-_]+$")
HEADERS = [
    "Loom-Event-Id",
    "Loom-Event-Type",
    "Loom-Key",
    "Loom-Correlation-Id",
    "Loom-Causation-Id",
    "Loom-Occurred-At",
    "Loom-Model-Revision",
    "Loom-Key-Counts",
]


def compile_model(path: str) -> ir.Model:
    result = compile_files([str(ROOT / path)])
    assert result.model is not None, [str(d) for d in result.diagnostics]
    return result.model


def resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = doc
    for escaped in ref[2:].split("/"):
        part = escaped.replace("~1", "/").replace("~0", "~")
        assert part in node, f"{ref} does not resolve"
        node = node[part]
    return node


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [node["$ref"]] if "$ref" in node else [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def check_structure(doc: dict[str, Any]) -> None:
    """What the AsyncAPI 3.0.0 schema requires of the parts Loom writes."""
    assert doc["asyncapi"] == "3.0.0"
    assert set(doc["info"]) >= {"title", "version"}
    for ref in refs(doc):
        resolve(doc, ref)
    names = [*doc["channels"], *doc["operations"]]
    names += [k for section in doc["components"].values() for k in section]
    assert all(KEY.match(n) for n in names), names
    for channel in doc["channels"].values():
        assert isinstance(channel["address"], str) and channel["messages"]
    for operation in doc["operations"].values():
        assert operation["action"] in ("send", "receive")
        channel = operation["channel"]["$ref"]
        for message in operation["messages"]:
            assert message["$ref"].startswith(channel + "/messages/"), (channel, message)
    for message in doc["components"].get("messages", {}).values():
        assert message["payload"]["type"] == "object"
        assert message["correlationId"]["location"] == "$message.header#/Loom-Correlation-Id"
        headers = resolve(doc, message["headers"]["$ref"])
        tenanted = message["headers"]["$ref"].endswith("/Loom.TenantedHeaders")
        assert list(headers["properties"]) == HEADERS + ["Loom-Tenant"] * tenanted
    json.loads(asyncapi_text(doc))


def consumers(doc: dict[str, Any], operation: str) -> list[tuple[str, str]]:
    return [(c["name"], c["message"]) for c in doc["operations"][operation]["x-loom-consumers"]]


def messages_of(doc: dict[str, Any], operation: str) -> list[str]:
    return [m["$ref"].rsplit("/", 1)[1] for m in doc["operations"][operation]["messages"]]


def test_shop_document() -> None:
    model = compile_model(SHOP)
    doc = asyncapi_document(model)
    check_structure(doc)
    assert doc["info"]["title"] == "Orders, Inventory, Payment"
    assert doc["info"]["version"] == model.revision != ""
    assert doc["defaultContentType"] == "application/json"
    assert {name: (c["address"], list(c["messages"])) for name, c in doc["channels"].items()} == {
        "Orders.Fulfilment": (
            "loom.Orders.Fulfilment",
            ["Orders.OrderPlaced", "Orders.PaymentTimedOut"],
        ),
        "Inventory.Stock": (
            "loom.Inventory.Stock",
            ["Inventory.StockReserved", "Inventory.ReservationReleased"],
        ),
        "Payment.Payments": (
            "loom.Payment.Payments",
            ["Payment.PaymentSucceeded", "Payment.PaymentFailed", "Payment.OrderCancelled"],
        ),
    }
    assert list(doc["operations"]) == [
        f"{c}.{action}"
        for c in ("Orders.Fulfilment", "Inventory.Stock", "Payment.Payments")
        for action in ("send", "receive")
    ]
    assert messages_of(doc, "Payment.Payments.send") == [
        "Payment.PaymentSucceeded",
        "Payment.PaymentFailed",
        "Payment.OrderCancelled",
    ]
    assert consumers(doc, "Orders.Fulfilment.receive") == [
        ("Orders.PaymentDeadline.create(OrderPlaced)", "Orders.OrderPlaced"),
        ("Orders.OrderProgress.on(OrderPlaced)", "Orders.OrderPlaced"),
        ("Inventory.reserveStock.on(Orders.OrderPlaced)", "Orders.OrderPlaced"),
        ("Inventory.reserveStock.on(Orders.PaymentTimedOut)", "Orders.PaymentTimedOut"),
    ]
    assert consumers(doc, "Inventory.Stock.receive") == [
        ("Orders.OrderProgress.on(Inventory.StockReserved)", "Inventory.StockReserved"),
        ("Orders.OrderProgress.on(Inventory.ReservationReleased)", "Inventory.ReservationReleased"),
        ("Payment.takePayment.on(Inventory.StockReserved)", "Inventory.StockReserved"),
        ("Payment.takePayment.on(Inventory.ReservationReleased)", "Inventory.ReservationReleased"),
    ]
    assert len(consumers(doc, "Payment.Payments.receive")) == 8
    messages = doc["components"]["messages"]
    assert list(messages) == [
        "Orders.OrderPlaced",
        "Orders.PaymentTimedOut",
        "Inventory.StockReserved",
        "Inventory.ReservationReleased",
        "Payment.PaymentSucceeded",
        "Payment.PaymentFailed",
        "Payment.OrderCancelled",
    ]
    uuid_ = {"type": "string", "format": "uuid"}
    placed = messages["Orders.OrderPlaced"]
    assert (placed["name"], placed["contentType"]) == ("Orders.OrderPlaced", "application/json")
    assert placed["payload"] == {
        "type": "object",
        "properties": {
            "order": uuid_,
            "sku": {"type": "string"},
            "quantity": {"type": "integer", "format": "int64"},
            "failPayment": {"type": "boolean"},  # the HTTP surface's spelling
        },
        "required": ["order", "sku", "quantity", "failPayment"],
    }
    for name in list(messages)[1:]:
        payload = messages[name]["payload"]
        assert payload["properties"]["order"] == uuid_, name
    assert list(messages["Inventory.StockReserved"]["payload"]["properties"]) == [
        "order",
        "failPayment",
    ]
    headers = doc["components"]["schemas"]["Loom.Headers"]
    assert headers["required"] == [
        "Loom-Event-Id",
        "Loom-Event-Type",
        "Loom-Key",
        "Loom-Correlation-Id",
        "Loom-Occurred-At",
    ]
    assert headers["properties"]["Loom-Event-Id"]["format"] == "uuid"


def test_the_contexts_a_service_holds() -> None:
    model = compile_model(SHOP)
    payment = asyncapi_document(model, ["Payment"])
    check_structure(payment)
    assert payment["info"]["title"] == "Payment"
    # Payment consumes Inventory's stock events and publishes its own; Orders' channel is not its
    assert list(payment["channels"]) == ["Inventory.Stock", "Payment.Payments"]
    assert list(payment["operations"]) == ["Inventory.Stock.receive", "Payment.Payments.send"]
    assert consumers(payment, "Inventory.Stock.receive") == [
        ("Payment.takePayment.on(Inventory.StockReserved)", "Inventory.StockReserved"),
        ("Payment.takePayment.on(Inventory.ReservationReleased)", "Inventory.ReservationReleased"),
    ]
    assert list(payment["components"]["messages"]) == [
        "Inventory.StockReserved",
        "Inventory.ReservationReleased",
        "Payment.PaymentSucceeded",
        "Payment.PaymentFailed",
        "Payment.OrderCancelled",
    ]
    inventory = asyncapi_document(model, ["Inventory"])
    assert list(inventory["operations"]) == [
        "Orders.Fulfilment.receive",
        "Inventory.Stock.send",
        "Payment.Payments.receive",
    ]
    # of Payment's channel Inventory consumes one event: only that one is in its receive
    assert messages_of(inventory, "Payment.Payments.receive") == ["Payment.PaymentFailed"]
    with pytest.raises(ValueError, match="no context Shipping"):
        asyncapi_document(model, ["Payment", "Shipping"])


MIXED = """
context Sales tenanted {
  aggregate Order { n: int = 0 }
  event Placed { order: Order id }
}
context Catalog {
  aggregate Product { n: int = 0 }
  event Listed { product: Product id }
  // an untenanted context's channel may carry a tenanted context's event: the event decides
  channel Feed { carries: Listed, Sales.Placed }
}
"""


def test_only_a_tenanted_contexts_messages_name_the_tenant_header() -> None:
    result = compile_sources({"mixed.loom": MIXED})
    assert result.model is not None, [d.message for d in result.diagnostics]
    doc = asyncapi_document(result.model)
    check_structure(doc)
    messages = doc["components"]["messages"]
    assert {name: m["headers"]["$ref"].rsplit("/", 1)[1] for name, m in messages.items()} == {
        "Sales.Placed": "Loom.TenantedHeaders",
        "Catalog.Listed": "Loom.Headers",
    }
    schemas = doc["components"]["schemas"]
    tenant = schemas["Loom.TenantedHeaders"]["properties"]["Loom-Tenant"]
    assert tenant["type"] == "string" and "tenant" in tenant["description"]
    assert "Loom-Tenant" in schemas["Loom.TenantedHeaders"]["required"]
    assert "Loom-Tenant" not in schemas["Loom.Headers"]["properties"]
    # a model without a tenanted context's message has no such schema
    untenanted = asyncapi_document(compile_model(SHOP))
    assert "Loom.TenantedHeaders" not in untenanted["components"]["schemas"]


def test_a_model_without_channels() -> None:
    model = compile_model(BANKING)
    doc = asyncapi_document(model)
    check_structure(doc)
    assert (doc["channels"], doc["operations"], doc["components"]) == ({}, {}, {})
    files = generate(model)
    assert files["asyncapi.json"] == asyncapi_text(asyncapi_document(model, title="Banking"))
    assert json.loads(files["asyncapi.json"])["info"]["version"] == model.revision


def test_every_field_type() -> None:
    doc = asyncapi_document(compile_model(CONTRACT))
    check_structure(doc)
    # Whispered rides no channel: in process only, so not in the contract, though Shouts reacts
    assert list(doc["components"]["messages"]) == ["Wire.Shouted"]
    assert consumers(doc, "Wire.Loud.receive") == [("Wire.Shouts.on(Shouted)", "Wire.Shouted")]

    def optional(schema: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [schema, {"type": "null"}]}

    payload = doc["components"]["messages"]["Wire.Shouted"]["payload"]
    assert payload["properties"] == {
        "thing": {"type": "string", "format": "uuid"},
        "name": {"type": "string", "maxLength": 20},
        "count": {"type": "integer", "format": "int64"},
        "amount": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}},
        "notes": {"type": "array", "items": {"$ref": "#/components/schemas/Wire.Note"}},
        "memo": optional({"type": "string", "maxLength": 8}),
        "color": {"$ref": "#/components/schemas/Wire.Color"},
        "lastHeard": optional({"type": "string", "format": "date-time"}),
        "day": optional({"type": "string", "format": "date"}),
        "flag": {"type": "boolean"},
        "price": {
            "type": "string",
            "pattern": r"^-?[0-9]{1,8}(\.[0-9]{1,2})?$",
            "x-loom-decimal": {"precision": 10, "scale": 2},
        },
    }
    assert payload["required"] == list(payload["properties"])
    schemas = doc["components"]["schemas"]
    assert schemas["Wire.Color"] == {"type": "string", "enum": ["Red", "Green"]}
    assert schemas["Wire.Note"] == {
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 10}, "weight": {"type": "string"}},
        "required": ["text", "weight"],
    }


@pytest.fixture(scope="module")
def contract(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    """The contract model's generated package (its `main` module) and its AsyncAPI document."""
    out = write_tree(generate(compile_model(CONTRACT)), tmp_path_factory.mktemp("contract"))
    return import_generated(out), json.loads((out / "asyncapi.json").read_text())


def _plain(schema: Any, openapi: dict[str, Any]) -> Any:
    """An OpenAPI schema as the contract spells it: references resolved, no titles or
    descriptions, Pydantic's int64 range (minimum / maximum) as `format: int64`, and no
    `maxLength` (a response model does not state it; the request models do)."""
    if isinstance(schema, list):
        return [_plain(s, openapi) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _plain(resolve(openapi, schema["$ref"]), openapi)
    out = {
        k: _plain(v, openapi)
        for k, v in schema.items()
        if k not in ("title", "description", "maxLength", "minimum", "maximum")
    }
    if schema.get("minimum") == -(2**63) and schema.get("maximum") == 2**63:  # as floats
        out["format"] = "int64"
    return out


def test_payload_types_are_the_http_surfaces(contract: tuple[Any, dict[str, Any]]) -> None:
    main, doc = contract
    openapi = main.build_app("sqlite+aiosqlite:///:memory:").openapi()
    thing = openapi["components"]["schemas"]["ThingOut"]["properties"]
    payload = doc["components"]["messages"]["Wire.Shouted"]["payload"]["properties"]
    event = compile_model(CONTRACT).contexts[0].events[0]
    compared = 0
    for field in event.fields:
        http = thing["id" if field.name == "thing" else field.name]
        assert _plain(payload[field.name], doc) == _plain(http, openapi), field.name
        compared += 1
    assert compared == 12
    # the lengths the contract states are the request models'
    create = openapi["components"]["schemas"]["ThingCreateInput"]["properties"]
    assert create["name"]["maxLength"] == payload["name"]["maxLength"] == 20


def test_payload_schema_accepts_encoded_events(contract: tuple[Any, dict[str, Any]]) -> None:
    main, doc = contract
    domain = importlib.import_module(main.__name__.rsplit(".", 1)[0] + ".wire.domain")
    validator = payload_validator(doc, "Wire.Shouted")
    full = domain.Shouted(
        thing=domain.ThingId(uuid.uuid4()),
        name="lamp",
        count=2**63 - 1,
        amount=Decimal("0.00000001"),
        tags=["a", "bb"],
        notes=[domain.Note(text="hi", weight=Decimal("12.50"))],
        memo="short",
        color=domain.Color.GREEN,
        last_heard=datetime(2026, 11, 29, 10, 0, tzinfo=UTC),
        day=date(2026, 11, 29),
        flag=True,
        price=Decimal("-99999999.5"),
    )
    empty = domain.Shouted(
        thing=domain.ThingId(uuid.uuid4()),
        name="",
        count=-(2**63),
        amount=Decimal(-3),
        tags=[],
        notes=[],
        memo=None,
        color=domain.Color.RED,
        last_heard=None,
        day=None,
        flag=False,
        price=Decimal("0.00"),
    )
    for event in (full, empty):
        encoded = json.loads(encode(event))
        errors = [e.message for e in validator.iter_errors(encoded)]
        assert errors == [], (encoded, errors)
        assert "lastHeard" in encoded and "last_heard" not in encoded
        assert decode(domain.Shouted, encode(event)) == event
        old = {("last_heard" if k == "lastHeard" else k): v for k, v in encoded.items()}
        assert decode(domain.Shouted, json.dumps(old)) == event  # an earlier build's payload
    # the schema is not vacuous: what the outbox never writes is refused
    encoded = json.loads(encode(full))
    wrong = [
        {**encoded, "amount": 1.5},  # a decimal as a JSON number
        {**encoded, "thing": "not-a-uuid"},
        {**encoded, "color": "Blue"},
        {**encoded, "lastHeard": "yesterday"},
        {**encoded, "notes": [{"text": "x" * 11, "weight": "1"}]},
        {k: v for k, v in encoded.items() if k != "memo"},  # an optional field is written as null
        # keyed by the Python name, as a payload written by an earlier build was: read, but not
        # what the contract declares
        {("last_heard" if k == "lastHeard" else k): v for k, v in encoded.items()},
    ]
    refused = [w for w in wrong if not validator.is_valid(w)]
    print(f"encoded payloads accepted: 2, wrong ones refused: {len(refused)} of {len(wrong)}")
    assert len(refused) == len(wrong)


def test_the_generated_file_is_the_document(tmp_path: Path) -> None:
    model = compile_model(SHOP)
    files = generate(model)
    text = files["asyncapi.json"]
    assert text == asyncapi_text(asyncapi_document(model, title="Orders, Inventory, Payment"))
    assert text.endswith("}\n") and text == generate(model)["asyncapi.json"]
    main = import_generated(write_tree(files, tmp_path / "shop"))
    assert main.__file__ is not None
    assert '"asyncapi.json"' in Path(main.__file__).read_text()
