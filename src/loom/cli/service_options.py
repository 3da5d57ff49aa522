"""The command-line declarations of `ServiceOptions` (`loom.serving.options`): `loom run` and
`loom up` take the same options, declared here once. `service_options` adds them to a command and
hands it the values as one `ServiceOptions`, its `service` parameter."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import click

from loom.serving.options import ServiceOptions

OPTIONS = [
    click.option(
        "--extern",
        type=str,
        help="Python module implementing the model's extern operations "
        "(default: $LOOM_EXTERN_MODULE). The model's folder is importable.",
    ),
    click.option(
        "--jwt-secret",
        type=str,
        help="Verify bearer tokens (JWT, HS256) with this secret, at least 32 bytes "
        "(default: $LOOM_JWT_SECRET; prefer the variable: an argument shows in `ps`). "
        "Without a key every request is anonymous.",
    ),
    click.option(
        "--jwt-public-key",
        type=click.Path(path_type=Path),
        help="Verify bearer tokens with this PEM public key file: RS256 (RSA) or ES256 "
        "(EC P-256) (default: $LOOM_JWT_PUBLIC_KEY).",
    ),
    click.option(
        "--jwt-audience",
        type=str,
        help="The `aud` a token must carry (default: $LOOM_JWT_AUDIENCE).",
    ),
    click.option(
        "--jwt-issuer", type=str, help="The `iss` a token must carry (default: $LOOM_JWT_ISSUER)."
    ),
    click.option(
        "--tenant-claim",
        type=str,
        help="The token claim naming the caller's tenant, for tenanted contexts (default: "
        "$LOOM_TENANT_CLAIM, else `tenant`).",
    ),
    click.option(
        "--max-body-bytes",
        type=int,
        help="Largest request body in bytes (default: $LOOM_MAX_BODY_BYTES, else 1 MiB); "
        "larger ones are answered 413.",
    ),
    click.option(
        "--max-url-bytes",
        type=int,
        help="Longest URL in bytes (default: $LOOM_MAX_URL_BYTES, else 8 KiB); longer ones "
        "are answered 414.",
    ),
    click.option(
        "--max-header-count",
        type=int,
        help="Most header lines of a request (default: $LOOM_MAX_HEADER_COUNT, else 100); "
        "more are answered 431.",
    ),
    click.option(
        "--max-header-bytes",
        type=int,
        help="Largest size of a request's header lines together, in bytes (default: "
        "$LOOM_MAX_HEADER_BYTES, else 32 KiB); larger ones are answered 431.",
    ),
    click.option(
        "--header-timeout",
        type=float,
        help="Seconds a connection has to send a whole request head, from its opening or its "
        "previous answer (default: $LOOM_HEADER_TIMEOUT, else 10); then it is closed.",
    ),
    click.option(
        "--keep-alive-timeout",
        type=float,
        help="Seconds an idle connection is kept open between requests (default: "
        "$LOOM_KEEP_ALIVE_TIMEOUT, else 5).",
    ),
    click.option(
        "--relay-lease",
        type=float,
        help="How long the outbox relay holds the rows it claimed, in seconds (default: "
        "$LOOM_RELAY_LEASE, else 60); rows a crashed replica held wait that long.",
    ),
    click.option(
        "--redelivery-wait",
        type=float,
        help="How long a broker message a consumer fetched and never settled (its replica "
        "was killed) waits before another consumer gets it, in seconds (default: "
        "$LOOM_REDELIVERY_WAIT, else 30; a broker URL's ?ack_wait= wins for its broker). "
        "Shorter: a crash delays the work less, but a consumer that stalls that long (a "
        "blocking extern call) has its message run elsewhere too. The same for every "
        "deployable.",
    ),
    click.option(
        "--idempotency-ttl",
        type=float,
        help="How long an Idempotency-Key is remembered, in seconds "
        "(default: $LOOM_IDEMPOTENCY_TTL, else 86400).",
    ),
    click.option(
        "--pool-size",
        type=int,
        help="Database connections each replica keeps open (default: $LOOM_POOL_SIZE, else 5).",
    ),
    click.option(
        "--pool-overflow",
        type=int,
        help="More connections a replica may open under load, closed again after "
        "(default: $LOOM_POOL_OVERFLOW, else 10).",
    ),
    click.option(
        "--pool-timeout",
        type=float,
        help="Seconds a request waits for a database connection before it answers 503 "
        "(default: $LOOM_POOL_TIMEOUT, else 30).",
    ),
    click.option(
        "--migrate",
        is_flag=True,
        help="Apply pending migrations first; with no migrations/ folder, apply additive "
        "changes (new tables, new optional or defaulted fields) directly.",
    ),
]


def service_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with the options of `OPTIONS`, handed to it as `service: ServiceOptions`."""
    names = [f.name for f in fields(ServiceOptions)]

    @functools.wraps(command)
    def wrapper(**given: Any) -> None:
        service = ServiceOptions(**{name: given.pop(name) for name in names})
        command(**given, service=service)

    for option in reversed(OPTIONS):
        wrapper = option(wrapper)
    return wrapper
