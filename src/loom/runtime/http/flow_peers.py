"""The flow of one correlation across deployables: this deployable asks its peers' flow route
(`GET /api/admin/flow/{id}`, `http/flow_admin.py`) and merges what they answer.

The peers are the deployables this one knows the URL of: every `LOOM_API_<CONTEXT>` (`loom run
--api CONTEXT=URL`; `loom up` gives each deployable every other one's), each URL once. Each is
asked with the caller's `Authorization` (its token, so a tenant's administrator sees its
tenant's entries there too), at once, and waited for at most `LOOM_FLOW_PEER_TIMEOUT` seconds
(2 by default): one that does not answer, or answers other than 200, is named in `peers` with
why, and the flow shows what the others answered.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final
from urllib.parse import quote

from loom.runtime.http.api_calls import ENV_PREFIX
from loom.runtime.http.flow_model import FlowOut, PeerOut, in_order
from loom.runtime.values.environment import env_number

if TYPE_CHECKING:
    import httpx  # imported where the peers are asked: a service that never does loads none

TIMEOUT_VARIABLE: Final = "LOOM_FLOW_PEER_TIMEOUT"
DEFAULT_TIMEOUT: Final = 2.0


def peer_urls(environ: Mapping[str, str] | None = None) -> list[str]:
    """The base URLs of the other deployables, each once, in the variables' order."""
    environ = os.environ if environ is None else environ
    out: list[str] = []
    for name, value in sorted(environ.items()):
        url = value.strip().rstrip("/")
        is_url = url.startswith(("http://", "https://"))
        if name.startswith(ENV_PREFIX) and is_url and url not in out:
            out.append(url)
    return out


def peer_timeout() -> float:
    """How long a peer is waited for (LOOM_FLOW_PEER_TIMEOUT, seconds); ValueError naming the
    variable when it is no number > 0 (the flow route reads it when it is built: a bad value
    stops the start)."""
    value = env_number(TIMEOUT_VARIABLE, float, "a number of seconds > 0", lambda n: n > 0)
    return DEFAULT_TIMEOUT if value is None else value


async def with_peers(found: FlowOut, authorization: str | None) -> FlowOut:
    """`found` (this deployable's flow) with every peer's entries merged in, and `peers` saying
    which answered."""
    import httpx

    urls = peer_urls()
    if not urls:
        return found
    try:
        timeout = peer_timeout()
    except ValueError as exc:  # a console without the flow route, which refuses it at start
        peers = [_silent(url, f"not asked: {exc}") for url in urls]
        return found.model_copy(update={"peers": peers})
    headers = {"Authorization": authorization} if authorization else {}
    path = f"/api/admin/flow/{quote(found.correlation_id, safe='')}"
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:

        async def ask(url: str) -> tuple[PeerOut, FlowOut | None]:
            try:
                answer = await asyncio.wait_for(client.get(url + path, headers=headers), timeout)
            except (TimeoutError, httpx.TimeoutException):
                return _silent(url, f"did not answer within {timeout:g}s"), None
            except httpx.HTTPError as exc:
                return _silent(url, f"did not answer: {type(exc).__name__}: {exc}"), None
            if answer.status_code != 200:
                return _silent(url, f"answered {answer.status_code}: {_detail(answer)}"), None
            try:
                flow = FlowOut.model_validate_json(answer.content)
            except ValueError:
                return _silent(url, "answered what is not a flow"), None
            return PeerOut(url=url, deployable=flow.deployable, answered=True, error=None), flow

        answers = await asyncio.gather(*(ask(url) for url in urls))
    entries = list(found.entries)
    for _, flow in answers:
        if flow is not None:
            entries += flow.entries
    return found.model_copy(
        update={"entries": in_order(entries), "peers": [peer for peer, _ in answers]}
    )


def _silent(url: str, error: str) -> PeerOut:
    return PeerOut(url=url, deployable=None, answered=False, error=error)


def _detail(answer: httpx.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return "no problem body"
    return str(body.get("detail", "")) if isinstance(body, dict) else "no problem body"
