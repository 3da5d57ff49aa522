"""`asyncapi.json`: the AsyncAPI 3.0.0 contract of a service's durable events (docs/http.md,
"Contracts: AsyncAPI").

A pure function of the model and the contexts the service holds (all of them by default):

- `channels`: each durable `channel` (`<Context>.<Name>`) the service publishes to (it carries an
  event of one of those contexts) or consumes from (one of their reactions consumes an event it
  carries), at its broker address (`loom.model.messaging`), listing every event it carries;
- `operations`: `<channel>.send` with the events the service publishes on it, `<channel>.receive`
  with those it consumes, naming each consuming reaction by its stable consumer name
  (`x-loom-consumers`);
- `components.messages`: one per event carried, named by its event type (`Orders.OrderPlaced`),
  its payload the event's fields as the outbox writes them (`json_schema.py`), its headers the
  `Loom-*` ones (`Loom.Headers`; for an event of a tenanted context `Loom.TenantedHeaders`, the
  same and `Loom-Tenant`, which every such message carries), its correlation id the
  `Loom-Correlation-Id` header.

An event on no channel is delivered in process and never leaves the service: it is no part of the
contract.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from loom.codegen.python.json_schema import REF_PREFIX, Schemas
from loom.codegen.python.reactions import event_type
from loom.model import ir, messaging
from loom.model.deployables import channels_used, consumers
from loom.model.telemetry import qualified

ASYNCAPI_VERSION = "3.0.0"
CONTENT_TYPE = "application/json"
HEADERS_SCHEMA = "Loom.Headers"
TENANTED_HEADERS_SCHEMA = "Loom.TenantedHeaders"

# (header, schema, required): what every message carries beside its payload
_HEADERS: tuple[tuple[str, dict[str, Any], bool], ...] = (
    (
        messaging.HEADER_EVENT_ID,
        {
            "type": "string",
            "format": "uuid",
            "description": "The event's id (on NATS also Nats-Msg-Id): a consumer applies each "
            "id once.",
        },
        True,
    ),
    (
        messaging.HEADER_EVENT_TYPE,
        {"type": "string", "description": "The event type, the message's name."},
        True,
    ),
    (
        messaging.HEADER_KEY,
        {
            "type": "string",
            "description": "The ordering key: messages of one key reach a consumer in publish "
            "order.",
        },
        True,
    ),
    (
        messaging.HEADER_CORRELATION_ID,
        {
            "type": "string",
            "description": "Shared by every event of one chain: the X-Correlation-Id of the "
            "request that started it, else the id of its first event.",
        },
        True,
    ),
    (
        messaging.HEADER_CAUSATION_ID,
        {"type": "string", "description": "The id of the event whose reaction raised this one."},
        False,
    ),
    (
        messaging.HEADER_OCCURRED_AT,
        {"type": "string", "format": "date-time", "description": "When the event was raised."},
        True,
    ),
    (
        messaging.HEADER_MODEL_REVISION,
        {"type": "string", "description": "The revision of the model whose service wrote it."},
        False,
    ),
    (
        messaging.HEADER_KEY_COUNTS,
        {
            "type": "string",
            "pattern": r"^[A-Za-z0-9_.]+=[0-9]+(,[A-Za-z0-9_.]+=[0-9]+)*$",
            "description": "Per event type of the channel, how many events of this key its "
            "producer had committed, this one included (`Orders.OrderPlaced=1,Orders.OrderNoted"
            "=3`): a consumer applies it once the earlier ones of the types it reads are "
            "applied, by whichever replica.",
        },
        False,
    ),
)

# what a message of a tenanted context's event carries besides: only those, as an untenanted
# event has no tenant (the runtime sends the header only when there is one)
_TENANT_HEADER: tuple[str, dict[str, Any], bool] = (
    messaging.HEADER_TENANT,
    {
        "type": "string",
        "description": "The tenant the event was raised in: its consumers apply it in that "
        "tenant only, and refuse (dead-letter) a message of a tenanted context without it.",
    },
    True,
)

CORRELATION_LOCATION = f"$message.header#/{messaging.HEADER_CORRELATION_ID}"


def asyncapi_document(
    model: ir.Model, contexts: Collection[str] | None = None, *, title: str | None = None
) -> dict[str, Any]:
    """The AsyncAPI document of the service holding `contexts` (names; None: every context of
    the model). `title` defaults to the contexts' names; `info.version` is the model's revision
    ("0" for a model without one)."""
    held = [c.name for c in model.contexts] if contexts is None else list(contexts)
    unknown = sorted(set(held) - {c.name for c in model.contexts})
    if unknown:
        raise ValueError(f"the model has no context {', '.join(unknown)}")
    name = title or ", ".join(held)
    held_set = set(held)
    used = channels_used(model, held_set)
    # (consumer name, event) of every reaction of the held contexts, per channel carrying its
    # event, in model order: one pass, not one over every reaction per channel
    carriers: dict[ir.EventType, list[int]] = {}
    for i, ch in enumerate(used):
        for e in dict.fromkeys(ch.events):
            carriers.setdefault(e, []).append(i)
    reactions: list[list[tuple[str, str]]] = [[] for _ in used]
    for c in consumers(model):
        if c.context in held_set:
            for i in carriers.get(c.reaction.event, ()):
                reactions[i].append((c.name, event_type(c.reaction.event)))
    schemas = Schemas(model)
    contexts = {c.name: c for c in model.contexts}
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for ch, received in zip(used, reactions, strict=True):
        channel = qualified(ch.context, ch.name)
        sent = [event_type(e) for e in ch.events if e.context in held_set]
        carried = [event_type(e) for e in ch.events]
        channels[channel] = {
            "address": messaging.channel_address(channel),
            "title": channel,
            "description": f"channel {ch.name} of context {ch.context}, retention "
            f"{ch.retention}: each event is delivered at least once, tried at most "
            f"{ch.max_attempts} times, then dead-lettered.",
            "messages": {t: {"$ref": f"#/components/messages/{t}"} for t in carried},
        }
        if sent:
            operations[f"{channel}.send"] = _operation("send", channel, sent)
        if received:
            consumed = {t for _, t in received}
            operation = _operation("receive", channel, [t for t in carried if t in consumed])
            operation["x-loom-consumers"] = [{"name": n, "message": t} for n, t in received]
            operations[f"{channel}.receive"] = operation
        for e in ch.events:
            if event_type(e) not in messages:
                messages[event_type(e)] = _message(contexts[e.context], e, schemas)
    components: dict[str, Any] = {}
    if messages:
        headers = {HEADERS_SCHEMA: _headers(_HEADERS)}
        if any(
            m["headers"]["$ref"] == REF_PREFIX + TENANTED_HEADERS_SCHEMA for m in messages.values()
        ):
            headers[TENANTED_HEADERS_SCHEMA] = _headers((*_HEADERS, _TENANT_HEADER))
        components = {"messages": messages, "schemas": {**headers, **schemas.named}}
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": name,
            "version": model.revision or "0",
            "description": f"The durable events of the {name} service: the channels it "
            "publishes to and consumes from, with each message's payload and headers. Events on "
            "no channel never leave the service and are not part of it.",
        },
        "defaultContentType": CONTENT_TYPE,
        "channels": channels,
        "operations": operations,
        "components": components,
    }


def asyncapi_text(document: dict[str, Any]) -> str:
    """The document as the file `asyncapi.json` holds it (and `/asyncapi.json` serves it)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _headers(headers: tuple[tuple[str, dict[str, Any], bool], ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {h: schema for h, schema, _ in headers},
        "required": [h for h, _, required in headers if required],
    }


def _operation(action: str, channel: str, types: list[str]) -> dict[str, Any]:
    return {
        "action": action,
        "channel": {"$ref": f"#/channels/{channel}"},
        "messages": [{"$ref": f"#/channels/{channel}/messages/{t}"} for t in types],
    }


def _message(context: ir.Context, e: ir.EventType, schemas: Schemas) -> dict[str, Any]:
    event = context.event(e.name)
    headers = TENANTED_HEADERS_SCHEMA if context.tenanted else HEADERS_SCHEMA
    return {
        "name": event_type(e),
        "title": event.name,
        "summary": f"event {event.name} of context {event.context}",
        "contentType": CONTENT_TYPE,
        "headers": {"$ref": REF_PREFIX + headers},
        "correlationId": {
            "description": "The chain the event belongs to (docs/events.md, correlation ids).",
            "location": CORRELATION_LOCATION,
        },
        "payload": schemas.record(event.fields),
    }
