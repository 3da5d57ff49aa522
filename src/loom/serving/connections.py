"""Where a service's brokers (`--broker`) and the contexts it calls (`--api`) run: parsed from the
command line, checked against the model, and put in the environment the runtime reads them from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from loom.serving.held import OptionError, unknown

# `--broker NAME=URL`: NAME is a channel source's name, as the model declares it
_SOURCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def parse_brokers(values: Sequence[str]) -> dict[str, str]:
    """The `--broker` values: channel source -> URL, for `NAME=URL` (the broker of channel
    source NAME) and a bare `URL` (source "": the broker of every durable channel that names
    no source). Each source at most once, whatever its capitals."""
    found: dict[str, str] = {}
    for value in values:
        name, url = "", value.strip()
        head, equals, tail = url.partition("=")
        if equals and not _SCHEME.match(url):
            name, url = head.strip(), tail.strip()
            if not _SOURCE.fullmatch(name):
                raise OptionError(
                    f"--broker {value!r}: NAME in NAME=URL is a channel source's name "
                    "(letters, digits, _), e.g. --broker Bus=nats://127.0.0.1:4222"
                )
        if not _SCHEME.match(url):
            raise OptionError(
                f"--broker {value!r}: expected URL or NAME=URL, with a URL such as "
                "nats://127.0.0.1:4222 or redis://127.0.0.1:6379"
            )
        if any(known.upper() == name.upper() for known in found):
            which = f"channel source {name}" if name else "the default broker (a bare URL)"
            raise OptionError(f"--broker gives {which} twice: keep one")
        found[name] = url
    return found


def set_brokers(values: Sequence[str]) -> None:
    """Put the `--broker` values in the environment (`LOOM_BROKER_<NAME>`, `LOOM_BROKER`),
    where the service reads them when it is built. A source's variable spelt otherwise
    (`LOOM_BROKER_Bus`) yields to the command line."""
    brokers = parse_brokers(values)
    if not brokers:
        return
    # the runtime's names for the variables, one definition; `loom run` loads the runtime next
    from loom.runtime.messaging.broker_config import variable_for

    for source, url in brokers.items():
        variable = variable_for(source)
        for spelling in [v for v in os.environ if v.upper() == variable and v != variable]:
            del os.environ[spelling]
        os.environ[variable] = url


def refuse_unmatched(
    brokers: Sequence[str],
    apis: Sequence[str],
    contexts: Sequence[str],
    sources: Sequence[str],
) -> None:
    """Raise OptionError for a `--broker NAME=URL` naming no channel source of the model, or an
    `--api CONTEXT=URL` naming no context of it: a misspelt name would otherwise configure
    nothing, silently. Judged against the whole model (not the contexts served): `loom up` gives
    every deployable the same values."""
    by_upper = {s.upper(): s for s in sources}
    for name in parse_brokers(brokers):
        if name and name.upper() not in by_upper:
            raise OptionError(
                "--broker: " + unknown("channel source", name, sources, "channel sources")
            )
    known = {c.upper() for c in contexts}
    for name in parse_apis(apis):
        if name.upper() not in known:
            raise OptionError("--api: " + unknown("context", name, contexts, "contexts"))


def parse_apis(values: Sequence[str]) -> dict[str, str]:
    """The `--api CONTEXT=URL` values: context -> the base URL of the deployable serving it."""
    found: dict[str, str] = {}
    for value in values:
        name, equals, url = value.partition("=")
        name, url = name.strip(), url.strip()
        if not equals or not _SOURCE.fullmatch(name) or not url.startswith(("http://", "https://")):
            raise OptionError(
                f"--api {value!r}: expected CONTEXT=URL, with the base URL of the deployable "
                "serving the context, e.g. --api Directory=http://127.0.0.1:8001"
            )
        if any(known.upper() == name.upper() for known in found):
            raise OptionError(f"--api gives context {name} twice: keep one")
        found[name] = url
    return found


def set_apis(values: Sequence[str]) -> None:
    """Put the `--api` values in the environment (`LOOM_API_<CONTEXT>`), where the service reads
    them when it starts."""
    # the runtime's names for the variables, one definition; `loom run` loads the runtime next
    from loom.runtime.http.api_calls import variable_for

    for context, url in parse_apis(values).items():
        os.environ[variable_for(context)] = url
