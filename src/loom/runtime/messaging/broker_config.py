"""Which broker each channel source is on: configuration, never model. `LOOM_BROKER_<NAME>=URL`
puts the model's `channelSource NAME` on URL (`loom run --broker NAME=URL` sets it);
`LOOM_BROKER=URL` (`--broker URL`) is the broker of every durable channel that names no source.

The variable's NAME is the source's name as declared or in capitals (`LOOM_BROKER_Bus` or
`LOOM_BROKER_BUS`), since shells and deployment tools often only speak capitals."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from loom.runtime.values.environment import env_number
from loom.runtime.values.errors import StartupRefused

if TYPE_CHECKING:
    from loom.runtime.messaging.transports.base import Transport

ENV_DEFAULT = "LOOM_BROKER"
ENV_REDELIVERY_WAIT = "LOOM_REDELIVERY_WAIT"
# the key of the default broker in a source -> URL mapping: channels with no `source:`
DEFAULT_SOURCE = ""


def variable_for(source: str) -> str:
    """The variable that configures `source` (the default broker for "")."""
    return ENV_DEFAULT if source == DEFAULT_SOURCE else f"{ENV_DEFAULT}_{source.upper()}"


def broker_urls(environ: Mapping[str, str], sources: Iterable[str]) -> dict[str, str]:
    """source name -> URL for each of `sources` ("" for the default) that the environment
    configures. Two spellings of one source giving two URLs is refused: which one was meant?"""
    found: dict[str, str] = {}
    for source in sources:
        if source == DEFAULT_SOURCE:
            url = environ.get(ENV_DEFAULT, "").strip()
            if url:
                found[source] = url
            continue
        spellings = {f"{ENV_DEFAULT}_{source}", variable_for(source)}
        given = {name: environ[name].strip() for name in spellings if environ.get(name, "").strip()}
        if len(set(given.values())) > 1:
            names = " and ".join(sorted(given))
            raise StartupRefused(
                f"the service does not start: {names} both configure channel source {source}, "
                "with different URLs: keep one"
            )
        if given:
            found[source] = next(iter(given.values()))
    return found


def redelivery_wait() -> float | None:
    """LOOM_REDELIVERY_WAIT (`loom run --redelivery-wait`), seconds: how long a message a consumer
    fetched and never settled (its replica was killed) waits before the broker hands it to another
    fetcher: the `ack_wait` of every transport built from the environment, unless its URL names
    its own. None when unset; ValueError for a value that is not a number of seconds > 0."""
    return env_number(ENV_REDELIVERY_WAIT, float, "a number of seconds > 0", lambda n: n > 0)


def transports_from_environment(
    environ: Mapping[str, str], sources: Iterable[str], redelivery: float | None = None
) -> dict[str, Transport]:
    """A transport for each of `sources` the environment puts on a broker (`broker_urls`), with
    the `redelivery` wait (seconds, `redelivery_wait()`) as its `ack_wait` unless its URL names
    one; a URL of no known kind is refused, naming its variable."""
    urls = broker_urls(environ, sources)
    if not urls:
        return {}
    # loaded only now: the NATS and Redis clients cost a tenth of a second of start-up, which a
    # service without a broker never pays
    transports = importlib.import_module("loom.runtime.transports")
    found: dict[str, Transport] = {}
    for source, url in urls.items():
        try:
            defaults = {} if redelivery is None else {"ack_wait": redelivery}
            found[source] = transports.transport_for_url(url, defaults=defaults)
        except ValueError as exc:
            raise StartupRefused(
                f"the service does not start: {variable_for(source)}: {exc}"
            ) from None
    return found
