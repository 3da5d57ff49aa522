"""Idempotency keys: a mutating request sent with `Idempotency-Key` is applied at most once per key
and principal (docs/http.md#idempotency-keys).

The first unit of work such a request opens is keyed (`storage.work.Parking`): it does not commit at the
end of its block but waits for the answer. Then, on that same connection and in that same
transaction, the key's row — principal scope, key, request fingerprint, status, the headers that
matter, body, expiry — is inserted, and the whole commits at once; the events are dispatched
after. A retry with the same key and request gets the recorded answer (`Idempotent-Replayed:
true`); the same key with another request is a 422. Answers 2xx and 4xx are recorded, except 409
(a lost race is retried fresh) and 5xx / 503 (nothing was written, or nobody knows). A concurrent
duplicate loses the insert race on the primary key, rolls its own write back and answers the
winner's answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Column,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    delete,
    select,
    tuple_,
)
from starlette.requests import Request
from starlette.responses import Response

from loom.runtime.http.problems import problem_for
from loom.runtime.storage.dberrors import classify
from loom.runtime.storage.work import Parking, Units, parking
from loom.runtime.values import clock
from loom.runtime.values.environment import env_number
from loom.runtime.values.errors import ConcurrencyConflict, InvalidValue, LoomError
from loom.runtime.values.metrics import Metrics
from loom.runtime.values.principal import Principal, current_principal
from loom.runtime.values.problem_types import problem_type
from loom.runtime.values.types import UtcDateTime

logger = logging.getLogger("loom.http")

HEADER = "idempotency-key"
REPLAYED = "Idempotent-Replayed"
DEFAULT_TTL = timedelta(hours=24)
ENV_TTL = "LOOM_IDEMPOTENCY_TTL"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_VALID_KEY = re.compile(r"[\x20-\x7e]{1,255}")
# what a replay must carry besides the body; X-Correlation-Id is the retry's own
_RECORDED_HEADERS = frozenset(
    {"content-type", "location", "content-location", "etag", "last-modified", "retry-after"}
)
_PRUNE_EVERY = timedelta(minutes=1)
_PRUNE_BATCH = 500

idempotency_metadata = MetaData()
idempotency_keys = Table(
    "__loom_idempotency",
    idempotency_metadata,
    # "anonymous" | "user:<sub>" | "system", after "tenant:<length>:<tenant>:" in a tenant
    Column("scope", String, primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("status", Integer, nullable=False),
    Column("headers", Text, nullable=False),  # JSON object of the recorded headers
    Column("body", LargeBinary, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)
_k = idempotency_keys.c

Respond = Callable[[Request], Awaitable[Response]]


class IdempotencyKeyReused(LoomError):
    """The key was used before for another request (method, path, query or body)."""

    status, type, title = problem_type("idempotency-key-reused").parts()

    def __init__(self) -> None:
        super().__init__(
            "this Idempotency-Key was already used for a different request; "
            "use a new key for a new request"
        )


def resolve_ttl(value: timedelta | float | None) -> timedelta:
    """`value` (a timedelta or seconds), else LOOM_IDEMPOTENCY_TTL (seconds), else 24 h."""
    if value is None:
        value = env_number(
            ENV_TTL,
            float,
            "a number of seconds (an idempotency key lifetime must be positive)",
            lambda s: s > 0,
        )
        if value is None:
            return DEFAULT_TTL
    ttl = value if isinstance(value, timedelta) else timedelta(seconds=value)
    if ttl <= timedelta(0):
        raise ValueError(f"the idempotency key lifetime must be positive, not {value!r}")
    return ttl


def principal_scope(principal: Principal) -> str:
    """Whose keys: anonymous callers share one scope, each subject has its own; a tenant's are its
    own (one subject in two tenants has two scopes, so a key replayed in one never answers what
    the other recorded). A verified token without `sub` has no scope: its key is refused
    (`InvalidValue`), since it names nobody its answers could be replayed to alone — in the
    anonymous scope they would replay to every caller without a subject."""
    if principal.is_system:
        return "system"
    if principal.id:
        who = f"user:{principal.id}"
    elif principal.is_authenticated:
        raise InvalidValue(
            "an Idempotency-Key needs a bearer token with a subject (`sub`): keys are kept "
            "per subject, and this token has none",
            path="header.Idempotency-Key",
        )
    else:
        who = "anonymous"
    tenant = principal.tenant
    # the tenant's length first: no tenant name can make one scope read as another's
    return f"tenant:{len(tenant)}:{tenant}:{who}" if tenant else who


def fingerprint(request: Request, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (request.method.encode(), request.url.path.encode(), request.scope["query_string"]):
        digest.update(part)
        digest.update(b"\n")
    digest.update(hashlib.sha256(body).digest())
    return digest.hexdigest()


def _records(status: int) -> bool:
    return 200 <= status < 300 or (400 <= status < 500 and status != 409)


def _replay(row: Any) -> Response:
    headers = json.loads(row.headers)
    headers[REPLAYED] = "true"
    return Response(content=bytes(row.body), status_code=row.status, headers=headers)


class Idempotency:
    """The service's idempotency keys (`service.idempotency`); `ttl` is how long a key lives."""

    def __init__(self, units: Units) -> None:
        self._units = units
        self.ttl = DEFAULT_TTL
        self._pruned_at: datetime | None = None
        self.metrics = Metrics()  # create_app gives the app's

    async def run(self, request: Request, key: str, respond: Respond) -> Response:
        """Answer a mutating request that carries `Idempotency-Key: key`."""
        if not _VALID_KEY.fullmatch(key):
            message = "Idempotency-Key must be 1 to 255 printable ASCII characters"
            return problem_for(request, InvalidValue(message, path="header.Idempotency-Key"))
        try:
            body = await request.body()
            scope = principal_scope(current_principal())
            fp = fingerprint(request, body)
            found = await self._find(scope, key)
        except Exception as exc:  # noqa: BLE001 - answered as a problem, as the route's own are
            return problem_for(request, exc)
        if found is not None:
            return (
                self._replay(found)
                if found.fingerprint == fp
                else problem_for(request, IdempotencyKeyReused())
            )
        held = Parking()
        token = parking.set(held)
        try:
            response = await respond(request)
        except BaseException:
            parking.reset(token)
            if held.parked and held.work is not None:
                await held.work.abandon_parked()
            raise
        parking.reset(token)
        return await self._settle(request, held, scope, key, fp, response)

    async def _settle(
        self, request: Request, held: Parking, scope: str, key: str, fp: str, response: Response
    ) -> Response:
        work = held.work
        if work is None:  # no unit of work ran (e.g. the body did not validate): nothing to keep
            return response
        status = response.status_code
        body = getattr(response, "body", None)
        if not _records(status) or not isinstance(body, bytes):
            if held.parked:
                if _records(status):  # an answer that cannot be recorded (a stream): commit
                    await work.finish_parked()
                else:
                    await work.abandon_parked()
            return response
        headers = {
            name: value for name, value in response.headers.items() if name in _RECORDED_HEADERS
        }
        row = {
            "scope": scope,
            "key": key,
            "fingerprint": fp,
            "status": status,
            "headers": json.dumps(headers, separators=(",", ":")),
            "body": body,
            "expires_at": clock.now() + self.ttl,
        }
        insert = idempotency_keys.insert()
        try:
            if held.parked:
                try:
                    conn = await work.connection()
                    await conn.execute(insert, row)
                except BaseException:
                    await work.abandon_parked()
                    raise
                await work.finish_parked()
            else:  # the unit of work rolled back (a refusal): only the answer is recorded
                async with self._units.transaction() as own:
                    conn = await own.connection()
                    await conn.execute(insert, row)
        except Exception as exc:  # noqa: BLE001 - answered as a problem, as the route's own are
            if classify(exc) == "duplicate":  # a concurrent duplicate committed first
                return await self._winner(request, scope, key, fp)
            return problem_for(request, exc)
        await self._prune()
        return response

    async def _winner(self, request: Request, scope: str, key: str, fp: str) -> Response:
        try:
            found = await self._find(scope, key)
        except Exception as exc:  # noqa: BLE001 - answered as a problem, as the route's own are
            return problem_for(request, exc)
        if found is None:
            conflict = ConcurrencyConflict(
                "request",
                None,
                "another request with this Idempotency-Key ran at the same time; retry",
            )
            return problem_for(request, conflict)
        if found.fingerprint != fp:
            return problem_for(request, IdempotencyKeyReused())
        return self._replay(found)

    def _replay(self, row: Any) -> Response:
        self.metrics.idempotency_replays.inc()
        return _replay(row)

    async def _find(self, scope: str, key: str) -> Any:
        """The live record of (scope, key), or None; an expired one is deleted on the way."""
        where = (_k.scope == scope, _k.key == key)
        async with self._units.autocommit() as work:
            conn = await work.connection()
            row = (await conn.execute(select(idempotency_keys).where(*where))).first()
            now = clock.now()
            if row is not None and row.expires_at <= now:
                await conn.execute(delete(idempotency_keys).where(*where, _k.expires_at <= now))
                row = None
        return row

    async def _prune(self) -> None:
        """Delete a bounded batch of expired keys, at most once a minute; never fails a request."""
        now = clock.now()
        if self._pruned_at is not None and timedelta(0) <= now - self._pruned_at < _PRUNE_EVERY:
            return
        self._pruned_at = now
        expired = select(_k.scope, _k.key).where(_k.expires_at <= now).limit(_PRUNE_BATCH)
        stmt = delete(idempotency_keys).where(tuple_(_k.scope, _k.key).in_(expired))
        try:
            async with self._units.transaction() as work:
                conn = await work.connection()
                await conn.execute(stmt)
        except Exception:
            logger.warning("pruning expired idempotency keys failed", exc_info=True)
