"""Calls of another context's command and query handlers (`resource { kind: api }`).

A call is the request the callee's public route serves (`POST /api/commands/<name>` with a JSON
body, `GET /api/queries/<name>?…`), sent with the caller's `X-Correlation-Id` and `Authorization`
(a call the system makes, from a reaction, a timeout or a timer, sends a `Loom-System-Token`
naming the system principal of its tenant instead: `http/system_tokens.py`):

- in process when this service holds the bound context: through the app itself (an ASGI transport,
  no socket), in a fresh context, so the callee runs in its own unit of work, never the caller's
  transaction (nor an `Idempotency-Key` request's), with the principal the forwarded token names;
- over HTTP otherwise, to the base URL `LOOM_API_<CONTEXT>` gives (`loom run --api Ctx=URL`).

Either way the answer is validated into the handler's result type, and a failure is a problem of
the caller's request, never a hang or a 500: unreachable or a 5xx -> 502 `bad-gateway`, no answer
within the resource's `timeout` (retries included) -> 504 `gateway-timeout`, a 4xx problem of the
callee -> the same status and type, with `upstream` naming the context; any other answer (a 3xx,
never followed, a 200 that is not JSON, a 200 where a 204 is due) is a 502 too. Queries are retried
(`retries`, a short doubling backoff) on connection errors, 5xx and timeouts; commands never are.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from loom.model.telemetry import CONTEXT
from loom.runtime.http.call_log import Call, CallLog
from loom.runtime.http.system_tokens import HEADER as SYSTEM_TOKEN_HEADER
from loom.runtime.http.system_tokens import SystemTokens
from loom.runtime.storage.work import parking
from loom.runtime.values import clock
from loom.runtime.values.errors import LoomError, refused
from loom.runtime.values.logs import current_correlation_id
from loom.runtime.values.principal import current_authorization, current_principal
from loom.runtime.values.problem_types import problem_type

if TYPE_CHECKING:
    # httpx is imported where a call is made: a model without `resource { kind: api }` never
    # loads it (a tenth of the runtime's import time)
    import httpx
    from starlette.types import ASGIApp

    from loom.runtime.values.traces import Tracer

ENV_PREFIX: Final = "LOOM_API_"
# the first pause between two attempts of a query; it doubles each time
FIRST_BACKOFF_S: Final = 0.05
_LOCAL_BASE: Final = "http://loom.local"


def variable_for(context: str) -> str:
    """The variable giving the base URL of a context's deployable: `LOOM_API_<CONTEXT>`."""
    return ENV_PREFIX + context.upper()


@dataclass(frozen=True, slots=True)
class ApiResource:
    """A `resource NAME { kind: api  context: CONTEXT … }` of context `owner`: its calls wait at
    most `timeout` seconds (every attempt together); a query is tried `retries` more times."""

    owner: str
    name: str
    context: str
    timeout: float
    retries: int

    @property
    def key(self) -> str:
        """How generated code names it: `Owner.name`."""
        return f"{self.owner}.{self.name}"


class _Upstream(LoomError):
    """A failed call of another context's handler: its problem names that context."""

    def __init__(self, context: str, detail: str) -> None:
        super().__init__(detail)
        self.context = context

    def extensions(self) -> dict[str, Any]:
        return {"upstream": self.context}


class BadGateway(_Upstream):
    status, type, title = problem_type("bad-gateway").parts()


class GatewayTimeout(BadGateway):
    status, type, title = problem_type("gateway-timeout").parts()


class UpstreamProblem(LoomError):
    """A 4xx problem of the callee, relayed with its status, type and members."""

    def __init__(self, context: str, status: int, body: Mapping[str, Any]) -> None:
        detail = body.get("detail")
        super().__init__(str(detail) if detail is not None else f"context {context} refused")
        self.status = status
        self.type = str(body.get("type", "about:blank"))
        self.title = str(body.get("title", "Error"))
        self.context = context
        reserved = {"type", "title", "status", "detail", "instance"}
        self._members = {k: v for k, v in body.items() if k not in reserved}

    def extensions(self) -> dict[str, Any]:
        return {**self._members, "upstream": self.context}


class CallRefused(_Upstream):
    """An in-process command that could only wait for a lock its own caller holds."""

    status, type, title = problem_type("api-call-refused").parts()


class _Retry(Exception):
    """An attempt failed in a way a query may try again (connection, 5xx, attempt timeout)."""

    def __init__(self, final: LoomError) -> None:
        super().__init__(final.detail)
        self.final = final


def _adapter(answer: Any, cache: dict[Any, TypeAdapter[Any]]) -> TypeAdapter[Any]:
    found = cache.get(answer)
    if found is None:
        found = cache[answer] = TypeAdapter(answer)
    return found


def _wire(value: object) -> Any:
    """A domain value as JSON: wire models by their aliases, ids and decimals as text."""
    return to_jsonable_python(value, by_alias=True)


def _query_string(
    params: Mapping[str, object],
) -> list[tuple[str, str | int | float | bool | None]]:
    """Query parameters: a list repeats its key, a missing optional is left out, a payload (the
    only parameter) gives its fields."""
    out: list[tuple[str, str | int | float | bool | None]] = []
    for key, value in params.items():
        plain = _wire(value)
        items = plain.items() if isinstance(plain, dict) else [(key, plain)]
        for name, v in items:
            for one in v if isinstance(v, list) else [v]:
                if one is None:
                    continue
                out.append((name, json.dumps(one) if isinstance(one, bool) else str(one)))
    return out


class ApiClient:
    """The calls through one resource: `await service.api("Dispatch.directory").query(…)`."""

    def __init__(self, apis: Apis, resource: ApiResource, base: str, local: bool) -> None:
        self._apis = apis
        self.resource = resource
        self.base = base.rstrip("/")
        self.local = local

    async def query(self, handler: str, params: Mapping[str, object], answer: Any) -> Any:
        """`GET /api/queries/<handler>?…`, its 200 answer validated as `answer` (a type)."""
        url = f"{self.base}/api/queries/{handler}"
        request = self._apis.client(self.local).build_request(
            "GET", url, params=_query_string(params), headers=self._apis.forwarded()
        )
        return await self._call(request, answer, self.resource.retries)

    async def command(self, handler: str, body: object, answer: Any = None) -> Any:
        """`POST /api/commands/<handler>` with `body` (the parameters by name, or the only
        payload parameter itself); the answer validated as `answer`, None for a 204. Sent once."""
        if self.local:
            self._refuse_a_wait_on_the_caller()
        url = f"{self.base}/api/commands/{handler}"
        request = self._apis.client(self.local).build_request(
            "POST", url, json=_wire(body), headers=self._apis.forwarded()
        )
        return await self._call(request, answer, 0)

    def _refuse_a_wait_on_the_caller(self) -> None:
        """On SQLite an `Idempotency-Key` request's unit of work is one transaction holding the
        database's only writer lock from its first read or save on; a command served in process
        would wait for that lock until the caller gave up. Refused at once instead."""
        held = parking.get()
        work = held.work if held is not None else None
        if work is not None and work.holds_writer:
            context = self.resource.context
            raise CallRefused(
                context,
                f"the command of context {context} cannot run in process while this request's "
                "Idempotency-Key transaction holds SQLite's writer lock (since its first read or "
                "save): send the request without the key, call the command before any read or "
                "save, or run on PostgreSQL",
            )

    async def _call(self, request: httpx.Request, answer: Any, retries: int) -> Any:
        """The call, traced when the service traces, kept in the call log (`http/call_log.py`)."""
        at, started, outcome = clock.now(), time.monotonic(), "ok"
        try:
            return await self._traced(request, answer, retries)
        except LoomError as exc:
            outcome = f"{exc.status} {exc.detail}"
            raise
        finally:
            r = self.resource
            self._apis.calls.add(
                Call(
                    at=at,
                    correlation_id=request.headers.get("X-Correlation-Id"),
                    tenant=current_principal().tenant,
                    caller=r.owner,
                    callee=r.context,
                    request=f"{request.method} {request.url.path}",
                    outcome=outcome,
                    ms=round((time.monotonic() - started) * 1000, 1),
                )
            )

    async def _traced(self, request: httpx.Request, answer: Any, retries: int) -> Any:
        tracer = self._apis.tracer
        if tracer is None:
            return await self._attempts(request, answer, retries)
        r = self.resource
        attributes = {
            "http.request.method": request.method,
            "url.full": str(request.url.copy_with(query=None)),
            "server.address": request.url.host,
            CONTEXT: r.context,
            "loom.resource": r.key,
        }
        with tracer.span(f"{request.method} {request.url.path}", tracer.CLIENT, attributes) as span:
            carrier: dict[str, str] = {}
            tracer.inject(carrier)  # the callee's server span is this one's child
            request.headers.update(carrier)
            try:
                return await self._attempts(request, answer, retries)
            except LoomError as exc:
                tracer.refused(span, exc, exc.status)
                raise

    async def _attempts(self, request: httpx.Request, answer: Any, retries: int) -> Any:
        deadline = time.monotonic() + self.resource.timeout
        pause = FIRST_BACKOFF_S
        for attempt in range(retries + 1):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise _Retry(self._timed_out())
                response = await self._send(request, left)
                return self._answer(response, answer)
            except _Retry as failed:
                left = deadline - time.monotonic()
                if attempt == retries or left <= pause:
                    raise failed.final from None
                self._apis.retried += 1
                await asyncio.sleep(pause)
                pause *= 2
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _timed_out(self) -> GatewayTimeout:
        r = self.resource
        return GatewayTimeout(
            r.context, f"context {r.context} did not answer within {r.timeout:g}s ({r.key})"
        )

    async def _send(self, request: httpx.Request, left: float) -> httpx.Response:
        import httpx

        client = self._apis.client(self.local)
        context = self.resource.context
        request.extensions["timeout"] = httpx.Timeout(left).as_dict()
        try:
            if self.local:
                # a fresh context: the callee sees none of the caller's context variables (its
                # unit of work, an Idempotency-Key's held transaction), only the headers
                task = asyncio.create_task(client.send(request), context=contextvars.Context())
                return await asyncio.wait_for(task, left)
            # the client's own timeouts bound each read; this bounds the whole answer
            return await asyncio.wait_for(client.send(request), left)
        except (TimeoutError, httpx.TimeoutException):
            raise _Retry(self._timed_out()) from None
        except httpx.TransportError as exc:
            where = "in process" if self.local else self.base
            raise _Retry(
                BadGateway(context, f"context {context} is unreachable at {where}: {exc!r}")
            ) from None

    def _answer(self, response: httpx.Response, answer: Any) -> Any:
        context = self.resource.context
        status = response.status_code
        if status >= 500:
            raise _Retry(
                BadGateway(context, f"context {context} failed: {status} {_detail(response)}")
            )
        if status >= 400:
            body = _problem(response)
            if body is None:
                raise BadGateway(
                    context, f"context {context} answered {status} without a problem body"
                )
            raise UpstreamProblem(context, status, body)
        # anything but the answer the callee's route gives (204 without a result, 200 with JSON
        # holding one) is not that route: a redirect (never followed: the command would be sent
        # elsewhere), a login page, a proxy's own 200. The command cannot be known to have run.
        if answer is None:
            if status != 204:
                raise BadGateway(context, _unexpected(context, response, "204 (no content)"))
            return None
        if status != 200 or not _is_json(response):
            raise BadGateway(context, _unexpected(context, response, "200 with a JSON body"))
        try:
            wire = _adapter(answer, self._apis.adapters).validate_json(response.content)
            return _to_domain(wire)
        except (ValidationError, LoomError) as exc:  # a value object's invariant: a LoomError
            raise BadGateway(
                context, f"context {context} answered what its contract does not say: {exc}"
            ) from None


def _to_domain(wire: Any) -> Any:
    """The domain value of a validated answer: generated request models build theirs
    (`to_domain()`), inside lists too; ids, scalars and enums are already what the domain holds."""
    if isinstance(wire, list):
        return [_to_domain(item) for item in wire]
    to_domain = getattr(wire, "to_domain", None)
    return to_domain() if callable(to_domain) else wire


def _is_json(response: httpx.Response) -> bool:
    kind: str = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def _unexpected(context: str, response: httpx.Response, expected: str) -> str:
    kind = response.headers.get("content-type", "no content type")
    what = f"{response.status_code} {response.reason_phrase} ({kind})"
    location = response.headers.get("location")
    if response.is_redirect and location:
        what += f", a redirect to {location}, not followed"
    return f"context {context} answered {what} where its route answers {expected}"


def _problem(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _detail(response: httpx.Response) -> str:
    body = _problem(response)
    if body is not None and "detail" in body:
        return str(body["detail"])
    return response.reason_phrase


class Apis:
    """The service's API resources and its two HTTP clients (in process, remote), built at start
    (`start`) and closed at stop (`close`). `retried` counts the query attempts sent again."""

    def __init__(
        self, resources: Sequence[ApiResource] = (), system_tokens: SystemTokens | None = None
    ) -> None:
        self.resources = {r.key: r for r in resources}
        self.system_tokens = system_tokens or SystemTokens.from_env()
        self._clients: dict[str, ApiClient] = {}
        self._local: httpx.AsyncClient | None = None
        self._remote: httpx.AsyncClient | None = None
        self.adapters: dict[Any, TypeAdapter[Any]] = {}
        self.retried = 0
        self.calls = CallLog()  # the calls made, for the flow of a correlation
        # the service's spans (`values/traces.py`): a call is a CLIENT span; None: not traced
        self.tracer: Tracer | None = None

    def urls(
        self, local: Sequence[str] | None, given: Mapping[str, str], environ: Mapping[str, str]
    ) -> dict[str, str]:
        """context -> base URL of every bound context this service does not hold; a missing or
        bad one refuses the start, one sentence per context, naming its variable and flag."""
        out: dict[str, str] = {}
        wrong: dict[str, str] = {}
        for r in self.resources.values():
            if local is None or r.context in local or r.context in out or r.context in wrong:
                continue
            url = given.get(r.context) or environ.get(variable_for(r.context), "").strip()
            url = url or environ.get(ENV_PREFIX + r.context, "").strip()
            if not url:
                wrong[r.context] = (
                    f"context {r.context} (bound by resource {r.key}) runs in another deployable "
                    f"and no URL is given for it: set {variable_for(r.context)}=URL or pass "
                    f"--api {r.context}=URL"
                )
            elif not url.startswith(("http://", "https://")):
                wrong[r.context] = (
                    f"{variable_for(r.context)}={url!r} is no http:// or https:// URL"
                )
            else:
                out[r.context] = url
        if wrong:
            raise refused(list(wrong.values()))
        return out

    def start(self, app: ASGIApp, urls: Mapping[str, str]) -> None:
        if not self.resources:
            return
        import httpx

        self._local = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))
        if urls:
            # a redirect is not followed (a command would be sent twice, or somewhere else)
            self._remote = httpx.AsyncClient(follow_redirects=False)
        for key, r in self.resources.items():
            url = urls.get(r.context)
            self._clients[key] = ApiClient(self, r, url or _LOCAL_BASE, url is None)

    def forwarded(self) -> dict[str, str]:
        """The headers a call carries: the correlation id, and who calls: the request's
        `Authorization`, or the system principal (of its tenant) as a system token."""
        headers: dict[str, str] = {}
        correlation = current_correlation_id()
        if correlation is not None:
            headers["X-Correlation-Id"] = correlation
        principal = current_principal()
        if principal.is_system:
            headers[SYSTEM_TOKEN_HEADER] = self.system_tokens.issue(principal.tenant)
            return headers
        authorization = current_authorization()
        if authorization is not None:
            headers["Authorization"] = authorization
        return headers

    def client(self, local: bool) -> httpx.AsyncClient:
        client = self._local if local else self._remote
        if client is None:
            raise RuntimeError("the service's API clients are not started")
        return client

    def __call__(self, key: str) -> ApiClient:
        try:
            return self._clients[key]
        except KeyError:
            raise RuntimeError(f"no API resource {key} is started in this service") from None

    async def close(self) -> None:
        for client in (self._local, self._remote):
            if client is not None:
                await client.aclose()
        self._local = self._remote = None
        self._clients.clear()
