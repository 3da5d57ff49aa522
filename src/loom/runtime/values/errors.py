"""Domain and persistence errors; each maps to one RFC 9457 problem (see `http.problems`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from starlette.exceptions import HTTPException

from loom.runtime.values.problem_types import problem_type

RefusalKind = Literal["precondition", "invariant", "state-gate"]

_REFUSAL = {
    kind: (problem_type(slug).uri, problem_type(slug).title)
    for kind, slug in (
        ("precondition", "precondition-failed"),
        ("invariant", "invariant-failed"),
        ("state-gate", "state-gate-refused"),
    )
}


_SAVED_NAMED = 5  # the detail names this many of the saves; the `saved` member holds all


class LoomError(Exception):
    """Base of the errors that become problem+json responses."""

    status: int = 500
    type: str = problem_type("internal").uri
    title: str = "Internal Server Error"

    # what the failed request had already written for good (a body that is not transactional
    # commits each save on its own): the problem's `saved` member, and named in its detail
    saved: tuple[tuple[str, object], ...] = ()

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def extensions(self) -> dict[str, Any]:
        """Extension members of the problem body."""
        return {}

    def note_saved(self, saved: list[tuple[str, object]]) -> None:
        """Say what the request saved before this refusal and did not undo."""
        if self.saved:
            return
        self.saved = tuple(saved)
        shown = ", ".join(f"{what} {id}" for what, id in saved[:_SAVED_NAMED])
        more = len(saved) - _SAVED_NAMED
        if more > 0:
            shown += f" and {more} more"
        self.detail += (
            f"; already saved by this request and not undone, as its body is not transactional:"
            f" {shown}"
        )

    def headers(self) -> dict[str, str] | None:
        """Response headers the problem carries (e.g. `WWW-Authenticate` on a 401)."""
        return None


class NotFound(LoomError):
    status, type, title = problem_type("not-found").parts()

    def __init__(self, aggregate: str, id: object, detail: str | None = None) -> None:
        super().__init__(detail or f"{aggregate} {id} does not exist")
        self.aggregate = aggregate
        self.id = id

    def extensions(self) -> dict[str, Any]:
        return {"aggregate": self.aggregate}


def key_not_found(aggregate: str, key: Mapping[str, object]) -> NotFound:
    """A miss by natural key or declared find: its detail names the fields matched and their
    values (`no Due with booking B-9`), never an id the caller did not give."""
    said = " and ".join(f"{field} {value}" for field, value in key.items())
    return NotFound(aggregate, None, f"no {aggregate} with {said}")


def not_found(aggregate: str, detail: str | None = None) -> NotFound:
    """The model's `notFound` / `notFound "detail"`: the by-id miss's problem (same status, type,
    title, `aggregate` member); a bare one says "<Aggregate> not found"."""
    return NotFound(aggregate, None, detail if detail is not None else f"{aggregate} not found")


class Refused(LoomError):
    status = 422

    def __init__(self, kind: RefusalKind, rule: str, detail: str) -> None:
        try:
            self.type, self.title = _REFUSAL[kind]
        except KeyError:
            raise ValueError(f"unknown refusal kind {kind!r}") from None
        super().__init__(detail)
        self.kind = kind
        self.rule = rule

    def extensions(self) -> dict[str, Any]:
        return {"rule": self.rule}


class ConcurrencyConflict(LoomError):
    status, type, title = problem_type("concurrency-conflict").parts()

    def __init__(self, aggregate: str, id: object, detail: str | None = None) -> None:
        super().__init__(
            detail or f"{aggregate} {id} was changed concurrently; reload it and try again"
        )
        self.aggregate = aggregate
        self.id = id

    def extensions(self) -> dict[str, Any]:
        return {"aggregate": self.aggregate}


class DuplicateKey(LoomError):
    """A save whose natural key (`unique (…)`) another row already holds: 409. `key` is the
    fields of the key that clashed, `("kind", "opt")`, when known."""

    status, type, title = problem_type("duplicate-key").parts()

    def __init__(
        self, aggregate: str, key: tuple[str, ...] = (), detail: str | None = None
    ) -> None:
        named = ", ".join(key[:-1]) + f" and {key[-1]}" if len(key) > 1 else "".join(key)
        super().__init__(detail or f"another {aggregate} already has this {named or 'natural key'}")
        self.aggregate = aggregate
        self.key = key

    def extensions(self) -> dict[str, Any]:
        if self.key:
            return {"aggregate": self.aggregate, "key": list(self.key)}
        return {"aggregate": self.aggregate}


def require(condition: bool, *, kind: RefusalKind, rule: str, detail: str) -> None:
    """Raise `Refused(kind, rule, detail)` when `condition` is false."""
    if not condition:
        raise Refused(kind, rule, detail)


class Forbidden(LoomError):
    """A `requires` gate refused the current principal: 403; an operation's is checked before its
    `when` gate, a factory's, a workflow `create`'s or a handler's before anything is read. `rule`
    names the gate, e.g. `Ticket.close: requires currentUser.hasRole("agent")`."""

    status, type, title = problem_type("forbidden").parts()

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule

    def extensions(self) -> dict[str, Any]:
        return {"rule": self.rule}


def authorize(condition: bool, *, rule: str, detail: str) -> None:
    """A `requires` gate: raise `Forbidden(rule, detail)` when `condition` is false."""
    if not condition:
        raise Forbidden(rule, detail)


class Unauthenticated(LoomError):
    """A bearer token that does not verify (bad signature, expired, wrong audience or issuer,
    malformed), or a route that needs a principal called without one: 401 with
    `WWW-Authenticate: Bearer`."""

    status, type, title = problem_type("unauthenticated").parts()

    def __init__(
        self, detail: str = "a valid bearer token is required", *, error: str = ""
    ) -> None:
        super().__init__(detail)
        self.error = error  # RFC 6750: "invalid_token" when a token was sent and refused

    def headers(self) -> dict[str, str] | None:
        if not self.error:
            return {"WWW-Authenticate": 'Bearer realm="loom"'}
        described = self.detail.replace("\\", "").replace('"', "'")
        return {
            "WWW-Authenticate": f'Bearer realm="loom", error="{self.error}", '
            f'error_description="{described}"'
        }


class InvalidValue(LoomError):
    """A value the database cannot store exactly (out of range, NUL in text, ...): the client's
    data, so a 422 `invalid-request` rather than a 500."""

    status, type, title = problem_type("invalid-request").parts()

    def __init__(
        self, detail: str = "a value is out of range or cannot be stored", path: str = "body"
    ) -> None:
        super().__init__(detail)
        self.path = path

    def extensions(self) -> dict[str, Any]:
        return {"errors": [{"path": self.path, "message": self.detail}]}


class Unavailable(LoomError):
    """Base of the 503 answers: the client may retry after `Retry-After` seconds."""

    status, type, title = problem_type("unavailable").parts()
    retry_after = 1

    def headers(self) -> dict[str, str] | None:
        return {"Retry-After": str(self.retry_after)}


class Overloaded(Unavailable):
    """Every pooled connection stayed busy for the pool timeout."""

    def __init__(self, detail: str = "The service is overloaded; retry shortly.") -> None:
        super().__init__(detail)


class SchemaChanged(Unavailable):
    """A statement named a table or column the database no longer has: a migration changed the
    schema under this replica (a newer version's), which cannot serve until it is replaced. A
    503 the client retries (another replica may answer), never a 500."""

    type = problem_type("schema-changed").uri
    retry_after = 5

    def __init__(
        self,
        detail: str = "The database's schema changed under this version of the service (a "
        "migration was applied); retry shortly.",
    ) -> None:
        super().__init__(detail)


class StoredValueUnknown(Unavailable):
    """A row holds a value its enum has no member for: the database is ahead of this model (a
    replica of an older model reading a newer one's rows) or a member was removed while rows held
    it (which `loom migrate` and `loom run` refuse). The read cannot be answered by this code: a
    503 naming the value, which a replica of the current model answers, never a 500."""

    type = problem_type("stored-value-unknown").uri
    retry_after = 5

    def __init__(self, table: str, column: str, value: object, enum: str) -> None:
        super().__init__(
            f"{table}.{column} holds {value!r}, which {enum} has no member for in this version "
            "of the service; retry later (a newer version may serve it), or rewrite the stored "
            "value (docs/migrations.md#removing-an-enum-member)"
        )
        self.table, self.column, self.value, self.enum = table, column, value, enum

    def extensions(self) -> dict[str, Any]:
        return {"column": f"{self.table}.{self.column}", "value": self.value, "enum": self.enum}


class DatabaseUnavailable(Unavailable):
    """The database refused or lost the connection before the work committed (a restart, an
    outage): nothing was written, and the same request may be sent again."""

    type = problem_type("database-unavailable").uri
    retry_after = 2

    def __init__(
        self, detail: str = "The database is unavailable; nothing was written. Retry shortly."
    ) -> None:
        super().__init__(detail)


class OutcomeUnknown(Unavailable):
    """The connection failed while the database was committing: the write may or may not have
    been applied. A retry with the same `Idempotency-Key` is applied at most once."""

    type = problem_type("outcome-unknown").uri

    def __init__(
        self,
        detail: str = "The connection to the database failed during the commit: the change may "
        "or may not have been applied. Retry with the same Idempotency-Key to apply it at most "
        "once, or read the data before retrying.",
    ) -> None:
        super().__init__(detail)


class StartupRefused(RuntimeError):
    """The service will not start (its database does not match its model, or does not answer):
    reported as its message alone, never a traceback (`http/edge.py`). `reasons`: one sentence
    per missing piece, when there are several (`loom run` prints each on its own line)."""

    def __init__(self, message: str, reasons: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons) or (message,)


def refused(reasons: Sequence[str]) -> StartupRefused:
    """The refusal for `reasons` (one sentence per missing piece)."""
    return StartupRefused("the service does not start: " + "; ".join(reasons), reasons)


class PayloadTooLarge(HTTPException):
    """A request body over the service's limit: 413 `payload-too-large`. An HTTPException (not a
    LoomError) because FastAPI re-raises those from its body reading, where any other error
    becomes a 400."""

    type, title = problem_type("payload-too-large").uri, problem_type("payload-too-large").title

    def __init__(self, limit: int) -> None:
        super().__init__(
            413, f"the request body is larger than {limit} bytes; send at most {limit} bytes"
        )
        self.limit = limit
