"""The options of `loom run`: those that are the same for every deployable (`ServiceOptions`: the
extern module, how bearer tokens are verified, the limits, the database pool and `--migrate`),
which `loom up` takes too and gives every deployable it starts, and those naming one service
(`RunOptions`). `loom.cli.service_options` declares them for the command line.

Each service option reaches the service through its `LOOM_*` environment variable, which the
runtime reads when the app is built; `--migrate` is the one without a variable.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from loom.model import ir
from loom.serving.held import OptionError


@dataclass
class ServiceOptions:
    """`loom run`'s options that `loom up` gives every deployable (`loom run --help` words each)."""

    extern: str | None = None
    jwt_secret: str | None = None
    jwt_public_key: Path | None = None
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    tenant_claim: str | None = None
    max_body_bytes: int | None = None
    max_url_bytes: int | None = None
    max_header_count: int | None = None
    max_header_bytes: int | None = None
    header_timeout: float | None = None
    keep_alive_timeout: float | None = None
    relay_lease: float | None = None
    redelivery_wait: float | None = None
    idempotency_ttl: float | None = None
    pool_size: int | None = None
    pool_overflow: int | None = None
    pool_timeout: float | None = None
    migrate: bool = False

    def variables(self) -> dict[str, str]:
        """The environment variables the options given set (an option not given sets none)."""
        key = self.jwt_public_key
        found = {
            "LOOM_EXTERN_MODULE": self.extern,
            "LOOM_JWT_SECRET": self.jwt_secret,
            "LOOM_JWT_PUBLIC_KEY": str(key) if key else None,
            "LOOM_JWT_AUDIENCE": self.jwt_audience,
            "LOOM_JWT_ISSUER": self.jwt_issuer,
            "LOOM_TENANT_CLAIM": self.tenant_claim,
            "LOOM_MAX_BODY_BYTES": _text(self.max_body_bytes),
            "LOOM_MAX_URL_BYTES": _text(self.max_url_bytes),
            "LOOM_MAX_HEADER_COUNT": _text(self.max_header_count),
            "LOOM_MAX_HEADER_BYTES": _text(self.max_header_bytes),
            "LOOM_HEADER_TIMEOUT": _text(self.header_timeout),
            "LOOM_KEEP_ALIVE_TIMEOUT": _text(self.keep_alive_timeout),
            "LOOM_IDEMPOTENCY_TTL": _text(self.idempotency_ttl),
            "LOOM_RELAY_LEASE": _text(self.relay_lease),
            "LOOM_REDELIVERY_WAIT": _text(self.redelivery_wait),
            "LOOM_POOL_SIZE": _text(self.pool_size),
            "LOOM_POOL_OVERFLOW": _text(self.pool_overflow),
            "LOOM_POOL_TIMEOUT": _text(self.pool_timeout),
        }
        return {variable: value for variable, value in found.items() if value}

    def arguments(self) -> list[str]:
        """The `loom run` arguments for the options that have no variable (`loom up` gives them
        to every deployable)."""
        return ["--migrate"] if self.migrate else []


@dataclass
class RunOptions(ServiceOptions):
    """The options of `loom run` (`loom run --help` words each one): those of every deployable
    (`ServiceOptions`, which `loom up` takes too) and these, which name this one service."""

    database_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    contexts: str | None = None
    deployable: str | None = None
    broker: list[str] = field(default_factory=list)
    api: list[str] = field(default_factory=list)


def _text(value: float | None) -> str | None:
    # a whole float as the user typed it (`--pool-timeout 0` is refused as '0', not '0.0')
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return None if value is None else str(value)


def apply(options: ServiceOptions) -> None:
    """Put the options in this process's environment, where the service (or, for `loom up`, each
    child `loom run`, which inherits it) reads them. Through the environment rather than the
    children's command lines: a secret given to `loom up` does not show in `ps` either.
    OptionError for options that contradict one another."""
    if options.jwt_secret and options.jwt_public_key:
        raise OptionError("give --jwt-secret or --jwt-public-key, not both")
    os.environ.update(options.variables())


def extern_path(files: list[Path]) -> None:
    """An extern module usually sits beside the model (or in the working folder): make both
    importable."""
    for folder in (str(files[0].resolve().parent), os.getcwd()):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def refuse_bad_values(files: list[Path], model: ir.Model) -> None:
    """OptionError (its sentence the one each deployable's start would refuse with) for a value
    in the environment `apply` set that a service of `model` would refuse when its app is built:
    a limit, a lifetime, a wait or a pool setting out of range, a token key that does not do, an extern
    module that does not import or lacks a class or method. `loom up` asks before it starts
    anything, rather than every deployable refusing on its own."""
    # the runtime's own readers, one definition of what each accepts; only `loom up` loads them
    from loom.codegen.python.services import externs_required
    from loom.runtime._auth import AuthConfigError, resolve_auth
    from loom.runtime._body_limit import resolve_max_body_bytes
    from loom.runtime._broker_config import redelivery_wait
    from loom.runtime._edge_limits import EdgeLimits
    from loom.runtime._environment import pool_settings
    from loom.runtime._externs import ExternError, load_externs
    from loom.runtime._idempotency import resolve_ttl
    from loom.runtime._relay import resolve_relay_options

    required: dict[str, list[str]] = {}
    for context in model.contexts:
        for cls, methods in externs_required(context):
            required.setdefault(cls, []).extend(methods)
    extern_path(files)
    try:
        resolve_max_body_bytes(None)
        EdgeLimits.from_environment()
        resolve_ttl(None)
        resolve_relay_options(None)
        redelivery_wait()
        pool_settings()
        resolve_auth(None)
        load_externs(None, required)
    except (ValueError, AuthConfigError, ExternError) as exc:
        raise OptionError(str(exc)) from None
