"""Putting the service options (`loom.serving.settings.ServiceSettings`) to work: into the
environment the runtime reads them from when it builds the service, and refused up front when a
service would refuse them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from loom.serving.held import OptionError

if TYPE_CHECKING:
    from loom.model import ir
    from loom.serving.settings import ServiceSettings


def apply(settings: ServiceSettings) -> None:
    """Put the settings in this process's environment, where the service (or, for `loom up`, each
    child `loom run`, which inherits it) reads them. Through the environment rather than the
    children's command lines: a secret given to `loom up` does not show in `ps` either.
    OptionError for options that contradict one another."""
    if settings.jwt_secret and settings.jwt_public_key:
        raise OptionError("give --jwt-secret or --jwt-public-key, not both")
    os.environ.update(settings.variables())


def extern_path(files: list[Path]) -> None:
    """An extern module usually sits beside the model (or in the working folder): make both
    importable."""
    for folder in (str(files[0].resolve().parent), os.getcwd()):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def refuse_bad_values(files: list[Path], model: ir.Model) -> None:
    """OptionError (its sentence the one each deployable's start would refuse with) for a value
    in the environment `apply` set that a service of `model` would refuse when its app is built:
    a limit, a lifetime, a wait or a pool setting out of range, a log format it does not know, a
    token key that does not do, an extern module that does not import or lacks a class or method.
    `loom up` asks before it starts anything, rather than every deployable refusing on its own."""
    # the runtime's own readers, one definition of what each accepts; only `loom up` loads them
    from loom.codegen.python.services import externs_required
    from loom.runtime.http.auth import AuthConfigError, resolve_auth
    from loom.runtime.http.body_limit import resolve_max_body_bytes
    from loom.runtime.http.edge_limits import EdgeLimits
    from loom.runtime.http.flow_peers import peer_timeout
    from loom.runtime.http.idempotency import resolve_ttl
    from loom.runtime.http.system_tokens import SystemTokens
    from loom.runtime.messaging.broker_config import redelivery_wait
    from loom.runtime.messaging.relay import resolve_relay_options
    from loom.runtime.values.environment import pool_settings
    from loom.runtime.values.externs import ExternError, load_externs
    from loom.runtime.values.logs import log_format

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
        peer_timeout()
        pool_settings()
        log_format()
        resolve_auth(None)
        SystemTokens.from_env()
        load_externs(None, required)
    except (ValueError, AuthConfigError, ExternError) as exc:
        raise OptionError(str(exc)) from None
