"""The typer declarations of `ServiceOptions` (`loom.service_options`): `loom run` and `loom up`
take the same options, declared here once. `with_service_options` puts them in a command's
signature, in the place of its `service: ServiceOptions` parameter, and hands the command the
values as that one `ServiceOptions`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from loom.service_options import ServiceOptions

FLAGS: dict[str, Any] = {
    "extern": Annotated[
        str | None,
        typer.Option(
            help="Python module implementing the model's extern operations "
            "(default: $LOOM_EXTERN_MODULE). The model's folder is importable."
        ),
    ],
    "jwt_secret": Annotated[
        str | None,
        typer.Option(
            help="Verify bearer tokens (JWT, HS256) with this secret, at least 32 bytes "
            "(default: $LOOM_JWT_SECRET; prefer the variable: an argument shows in `ps`). "
            "Without a key every request is anonymous."
        ),
    ],
    "jwt_public_key": Annotated[
        Path | None,
        typer.Option(
            help="Verify bearer tokens with this PEM public key file: RS256 (RSA) or ES256 "
            "(EC P-256) (default: $LOOM_JWT_PUBLIC_KEY)."
        ),
    ],
    "jwt_audience": Annotated[
        str | None,
        typer.Option(help="The `aud` a token must carry (default: $LOOM_JWT_AUDIENCE)."),
    ],
    "jwt_issuer": Annotated[
        str | None,
        typer.Option(help="The `iss` a token must carry (default: $LOOM_JWT_ISSUER)."),
    ],
    "tenant_claim": Annotated[
        str | None,
        typer.Option(
            help="The token claim naming the caller's tenant, for tenanted contexts (default: "
            "$LOOM_TENANT_CLAIM, else `tenant`)."
        ),
    ],
    "max_body_bytes": Annotated[
        int | None,
        typer.Option(
            help="Largest request body in bytes (default: $LOOM_MAX_BODY_BYTES, else 1 MiB); "
            "larger ones are answered 413."
        ),
    ],
    "max_url_bytes": Annotated[
        int | None,
        typer.Option(
            help="Longest URL in bytes (default: $LOOM_MAX_URL_BYTES, else 8 KiB); longer ones "
            "are answered 414."
        ),
    ],
    "max_header_count": Annotated[
        int | None,
        typer.Option(
            help="Most header lines of a request (default: $LOOM_MAX_HEADER_COUNT, else 100); "
            "more are answered 431."
        ),
    ],
    "max_header_bytes": Annotated[
        int | None,
        typer.Option(
            help="Largest size of a request's header lines together, in bytes (default: "
            "$LOOM_MAX_HEADER_BYTES, else 32 KiB); larger ones are answered 431."
        ),
    ],
    "header_timeout": Annotated[
        float | None,
        typer.Option(
            help="Seconds a connection has to send a whole request head, from its opening or its "
            "previous answer (default: $LOOM_HEADER_TIMEOUT, else 10); then it is closed."
        ),
    ],
    "keep_alive_timeout": Annotated[
        float | None,
        typer.Option(
            help="Seconds an idle connection is kept open between requests (default: "
            "$LOOM_KEEP_ALIVE_TIMEOUT, else 5)."
        ),
    ],
    "relay_lease": Annotated[
        float | None,
        typer.Option(
            help="How long the outbox relay holds the rows it claimed, in seconds (default: "
            "$LOOM_RELAY_LEASE, else 60); rows a crashed replica held wait that long."
        ),
    ],
    "redelivery_wait": Annotated[
        float | None,
        typer.Option(
            help="How long a broker message a consumer fetched and never settled (its replica "
            "was killed) waits before another consumer gets it, in seconds (default: "
            "$LOOM_REDELIVERY_WAIT, else 30; a broker URL's ?ack_wait= wins for its broker). "
            "Shorter: a crash delays the work less, but a consumer that stalls that long (a "
            "blocking extern call) has its message run elsewhere too. The same for every "
            "deployable."
        ),
    ],
    "idempotency_ttl": Annotated[
        float | None,
        typer.Option(
            help="How long an Idempotency-Key is remembered, in seconds "
            "(default: $LOOM_IDEMPOTENCY_TTL, else 86400)."
        ),
    ],
    "pool_size": Annotated[
        int | None,
        typer.Option(
            help="Database connections each replica keeps open (default: $LOOM_POOL_SIZE, else 5)."
        ),
    ],
    "pool_overflow": Annotated[
        int | None,
        typer.Option(
            help="More connections a replica may open under load, closed again after "
            "(default: $LOOM_POOL_OVERFLOW, else 10)."
        ),
    ],
    "pool_timeout": Annotated[
        float | None,
        typer.Option(
            help="Seconds a request waits for a database connection before it answers 503 "
            "(default: $LOOM_POOL_TIMEOUT, else 30)."
        ),
    ],
    "migrate": Annotated[
        bool,
        typer.Option(
            "--migrate",
            help="Apply pending migrations first; with no migrations/ folder, apply additive "
            "changes (new tables, new optional or defaulted fields) directly.",
        ),
    ],
}

PLACE = "service"  # the command's parameter the options stand in for


def with_service_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command`, whose `service: ServiceOptions` parameter typer sees as the options of
    `FLAGS`, in that place and order (their defaults the dataclass's)."""
    names = [f.name for f in fields(ServiceOptions)]
    assert list(FLAGS) == names, "FLAGS declares each field of ServiceOptions, in order"
    defaults = ServiceOptions()
    signature = inspect.signature(command, eval_str=True)
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param.name != PLACE:
            params.append(param)
            continue
        params += [
            inspect.Parameter(
                name,
                param.kind,
                default=getattr(defaults, name),
                annotation=FLAGS[name],
            )
            for name in names
        ]

    @functools.wraps(command)
    def wrapper(**given: Any) -> None:
        service = ServiceOptions(**{name: given.pop(name) for name in names})
        command(**given, **{PLACE: service})

    # what typer reads: the signature, and the annotations already evaluated
    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper
