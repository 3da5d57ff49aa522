"""Events in flight across a migration (issue 11 §4): the `events` section of a snapshot, and the
changes of a model's events that leave stored events undecodable.

A stored event (a pending or dead `__loom_outbox` row, a delivered one a `log` channel retains) is
JSON under its event type's name. The new model decodes it (`loom.runtime.values.codec`) when its type is
the name or the `renamed from` of one of the new model's events, and then when each field the new
event declares is in the payload under its name or its `renamed from`, or has a default (the
upcast of a missing field), with a value of a type the new field takes. Keys the new event no
longer declares are ignored: removing an event field breaks nothing.

So what breaks, between the events of the last snapshot and the model's:
- `removed`: an event type gone without a new event `renamed from` it;
- `missing`: a field added (or whose `renamed from` was dropped) with no default;
- `type`: a field whose type changed to one that does not take the old values (anything but the
  same type, the type made optional, or `int` to `decimal`). No upcast states a conversion yet:
  deliver the stored events first, or add a field beside the old one.

Each break says which stored rows it is about (`affects`): `loom.migrate.pending` counts them in
the database, and `loom migrate new` refuses the change while any is stored
(`loom.migrate-pending-events`). A snapshot from before this section has no `events`: only the
database's event types are then checked against the model (a type no event decodes).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

from loom.lang.types import show
from loom.migrate.folder import relative_source
from loom.migrate.snapshot import Snapshot
from loom.model import ir, naming

__all__ = [
    "Break",
    "EventSnap",
    "EventsSnap",
    "breaks",
    "decodable_types",
    "events_in",
    "events_of",
    "unknown_types",
    "with_events",
]


class EventFieldSnap(TypedDict):
    name: str
    type: str  # as the model spells it: `int`, `string?`, `Account id`, `Tag[]`
    default: bool
    renamed_from: str | None
    source: str | None  # `file:line:column` of the field


class EventSnap(TypedDict):
    formerly: list[str]  # the qualified names stored events of it may still carry
    durable: bool  # a channel carries it: only then is it stored
    fields: list[EventFieldSnap]
    source: str | None


EventsSnap = dict[str, EventSnap]  # by qualified type: `Bank.Credited`


def events_of(model: ir.Model) -> EventsSnap:
    """The events section of `model`."""
    out: EventsSnap = {}
    durable = {
        f"{e.context}.{e.name}" for c in model.contexts for ch in c.channels for e in ch.events
    }
    for context in model.contexts:
        for event in context.events:
            name = f"{context.name}.{event.name}"
            out[name] = {
                "formerly": [f"{context.name}.{event.renamed_from}"] if event.renamed_from else [],
                "durable": name in durable,
                "fields": [
                    {
                        "name": f.name,
                        "type": show(f.type),
                        "default": f.default is not None,
                        "renamed_from": f.renamed_from,
                        "source": _place(f.origin),
                    }
                    for f in event.fields
                ],
                "source": _place(event.origin),
            }
    return out


def _place(origin: ir.Origin) -> str:
    return f"{origin.file}:{origin.line}:{origin.column}"


def with_events(snapshot: Snapshot, events: EventsSnap, root: Path) -> Snapshot:
    """`snapshot` with its events section, each source relative to the model's folder `root`
    (as the tables' are when a revision is written)."""

    section = copy.deepcopy(events)
    for event in section.values():
        event["source"] = relative_source(event["source"], root)
        for f in event["fields"]:
            f["source"] = relative_source(f["source"], root)
    out = copy.copy(snapshot)
    out["events"] = dict(section)
    return out


def events_in(snapshot: Snapshot) -> EventsSnap | None:
    """The events section of a snapshot; None for one written before snapshots had it."""
    section: Any = snapshot.get("events")
    return section if isinstance(section, dict) else None


def decodable_types(events: EventsSnap) -> dict[str, str]:
    """Each stored event type the model decodes -> the event that decodes it."""
    out: dict[str, str] = {}
    for name, event in events.items():
        for old in event["formerly"]:
            out.setdefault(old, name)
    out.update({name: name for name in events})
    return out


Kind = Literal["removed", "missing", "type"]


@dataclass(frozen=True)
class Break:
    """A change that leaves some stored events undecodable: those of the types `stored` whose
    payload `affects` says so."""

    kind: Kind
    old: str  # the event type in the old model
    stored: tuple[str, ...]  # the event_type values of the rows it is about
    new: str | None = None  # the event of the new model that decodes the other types
    field: str | None = None  # `missing` / `type`: the new field
    keys: tuple[str, ...] = ()  # `missing`: the keys a payload may hold the field under
    was: str | None = None  # `type`: the old field's type
    now: str | None = None  # `type`: the new field's type
    source: str | None = None  # the new field's (or, `removed`, the old event's) place
    in_old_model: bool = False  # `source` is a place in the model as of the last migration
    durable: bool = True  # the old model stored events of it (a channel carried it)

    def affects(self, payload: Mapping[str, Any]) -> bool:
        """Whether a stored event of one of the `stored` types fails to decode."""
        if self.kind == "missing":
            return not any(k in payload for k in self.keys)
        if self.kind == "type":
            key = next((k for k in self.keys if k in payload), None)
            return key is not None and payload[key] is not None
        return True

    def describe(self) -> str:
        if self.kind == "removed":
            gone = " and ".join(self.stored)
            if self.new is None:
                return f"event type {gone} is no longer in the model"
            return f"event {self.new} is no longer `renamed from` {gone}"
        if self.kind == "missing":
            return (
                f"event {self.new} has the field `{self.field}`, with no default, that stored "
                f"{self.old} events do not hold"
            )
        return f"field `{self.field}` of event {self.new} changes from `{self.was}` to `{self.now}`"


def breaks(old: EventsSnap, new: EventsSnap) -> list[Break]:
    """What the change from the events `old` to `new` breaks, in old event order."""
    decodes = decodable_types(new)
    out: list[Break] = []
    for name, before in old.items():
        stored = (name, *before["formerly"])
        gone = tuple(t for t in stored if t not in decodes)
        target = decodes.get(name)
        if gone and target is None:
            out.append(Break("removed", name, gone, source=before["source"], in_old_model=True))
        elif gone and target is not None:  # still there, but its `renamed from` was dropped
            out.append(Break("removed", name, gone, target, source=new[target]["source"]))
        if target is None:
            continue
        kept = tuple(t for t in stored if decodes.get(t) == target)
        old_fields = {f["name"]: f for f in before["fields"]}
        for f in new[target]["fields"]:
            names = (f["name"], *([f["renamed_from"]] if f["renamed_from"] else []))
            # a payload is keyed by model names, or (written by an earlier build) Python names
            keys = tuple(dict.fromkeys(k for n in names for k in (n, naming.ident(n))))
            was = next((old_fields[k] for k in keys if k in old_fields), None)
            if was is None:
                if not f["default"]:
                    out.append(
                        Break("missing", name, kept, target, f["name"], keys, source=f["source"])
                    )
            elif not _takes(f["type"], was["type"]):
                out.append(
                    Break(
                        "type",
                        name,
                        kept,
                        target,
                        f["name"],
                        keys,
                        was["type"],
                        f["type"],
                        source=f["source"],
                    )
                )
    return [dataclasses.replace(b, durable=old[b.old]["durable"]) for b in out]


def unknown_types(stored: set[str], old: EventsSnap | None, new: EventsSnap) -> list[Break]:
    """Stored event types no event of the new model decodes, that the old model did not know
    either (events the old model knew are in `breaks`)."""
    known = set(decodable_types(old)) if old is not None else set()
    decodes = decodable_types(new)
    return [
        Break("removed", t, (t,)) for t in sorted(stored) if t not in decodes and t not in known
    ]


def _takes(now: str, was: str) -> bool:
    """Whether a field of type `now` decodes the stored values of a field of type `was`."""
    return now in (was, f"{was}?") or (was, now) in {
        ("int", "decimal"),
        ("int?", "decimal?"),
        ("int", "decimal?"),
    }
