"""Every option of `loom run`, defined once: its name, type, default, `LOOM_*` environment variable
and help. The command line (`loom.cli.settings_options` builds `loom run`'s and `loom up`'s options
from these fields), the service (through the variables `ServiceSettings.variables` sets, which the
runtime reads when `create_app` builds it) and the test kit (`loom.testing.serve(settings=...)`)
all take them from here, and docs/cli.md is checked against them (tests/cli/test_settings.py).

A value given on the command line wins over its variable, and a variable over the default. The
settings check each value's type (`LOOM_PORT=abc` is refused in one line, naming the variable or
the option); what range a value may take is the runtime's to say, once, when the service is built
(`loom.serving.options.refuse_bad_values`), so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, get_args, get_origin

from pydantic import Field, ValidationError
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from loom.runtime.values.environment import (
    DEFAULT_POOL_OVERFLOW,
    DEFAULT_POOL_SIZE,
    DEFAULT_POOL_TIMEOUT,
)

PREFIX = "LOOM_"
S = TypeVar("S", bound="ServiceSettings")


def setting(
    default: Any,
    help: str,
    *,
    variable: str | None = None,
    family: str | None = None,
    default_text: str | None = None,
    metavar: str | None = None,
    between: tuple[int, int, str] | None = None,
) -> Any:
    """A field of the settings: `help` words it; `variable` when it is not `LOOM_<NAME>`;
    `family` for a repeated option whose values each have a variable of their own (read by the
    runtime, not by the settings); `default_text` the default in words when the runtime decides
    it (the field's default is then None: not given); `metavar` its value's name in `--help`;
    `between` the least and the greatest value it may take, and how to say so (a range the
    runtime does not check)."""
    extra: JsonDict = {
        key: value
        for key, value in (
            ("family", family),
            ("default_text", default_text),
            ("metavar", metavar),
            ("between", between and between[2]),
        )
        if value is not None
    }
    if isinstance(default, list):
        return Field(default_factory=list, description=help, json_schema_extra=extra)
    return Field(
        default,
        description=help,
        validation_alias=variable,
        json_schema_extra=extra,
        ge=between[0] if between else None,
        le=between[1] if between else None,
    )


def extra(field: FieldInfo, key: str) -> str | None:
    found = field.json_schema_extra
    value = found.get(key) if isinstance(found, dict) else None
    return value if isinstance(value, str) else None


def variable(name: str, field: FieldInfo) -> str:
    """The environment variable of a field (for a family: how its variables are named)."""
    family = extra(field, "family")
    if family is not None:
        return family
    alias = field.validation_alias
    return alias if isinstance(alias, str) else f"{PREFIX}{name.upper()}"


def shown_default(field: FieldInfo) -> str | None:
    """The default as `--help` and docs/cli.md say it (None: none to say)."""
    text = extra(field, "default_text")
    if text is None and field.default not in (None, False, PydanticUndefined):
        text = str(field.default)
    return text


def option_names(cls: type[ServiceSettings]) -> list[str]:
    """The fields of `cls` in the order `--help` lists them: its own first (`loom run`: where it
    listens and what it serves), then those it inherits."""
    own = vars(cls)["__annotations__"]
    return sorted(cls.model_fields, key=lambda name: name not in own)


def value_kind(field: FieldInfo) -> type:
    """The type of the field's value: str, int, float, bool or list."""
    annotation = field.annotation
    if get_origin(annotation) is list:
        return list
    kinds = [a for a in get_args(annotation) if a is not type(None)] or [annotation]
    return kinds[0]  # type: ignore[no-any-return]


class _Environment(EnvSettingsSource):
    """The environment, without the variable families: `LOOM_BROKER` is a broker's URL, not the
    list of `--broker` values."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        if extra(field, "family") is not None:
            return None, field_name, False
        return super().get_field_value(field, field_name)


class ServiceSettings(BaseSettings):
    """The options that are the same for every deployable: `loom run` takes them, `loom up` gives
    every deployable it starts the same values, and the test kit serves with them."""

    # defer_build: a class's validator is built when it first validates (`loom run` never
    # validates ServiceSettings itself, only RunSettings)
    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        env_ignore_empty=True,  # a blank variable is unset, as the runtime reads it
        extra="ignore",
        validate_by_name=True,
        frozen=True,
        defer_build=True,
    )

    extern: str | None = setting(
        None,
        "Python module implementing the model's extern operations. The model's folder is "
        "importable.",
        variable="LOOM_EXTERN_MODULE",
        metavar="MODULE",
    )
    jwt_secret: str | None = setting(
        None,
        "Verify bearer tokens (JWT, HS256) with this secret, at least 32 bytes (prefer the "
        "variable: an argument shows in `ps`). Without a key every request is anonymous.",
    )
    jwt_public_key: str | None = setting(
        None,
        "Verify bearer tokens with this PEM public key, RS256 (RSA) or ES256 (EC P-256): a file, "
        "or (in the variable) the key itself.",
        metavar="PEM",
    )
    jwt_audience: str | None = setting(None, "The `aud` a token must carry.")
    jwt_issuer: str | None = setting(None, "The `iss` a token must carry.")
    tenant_claim: str | None = setting(
        None,
        "The token claim naming the caller's tenant, for tenanted contexts.",
        default_text="tenant",
    )
    service_secret: str | None = setting(
        None,
        "Sign and verify the system tokens of the calls a reaction, timeout or timer makes of "
        "another deployable's handlers with this secret, at least 32 bytes, the same on every "
        "deployable (prefer the variable). Without it a service trusts only its own calls in "
        "process; `loom up` gives its deployables one it draws.",
    )
    max_body_bytes: int | None = setting(
        None, "Largest request body in bytes; larger ones are answered 413.", default_text="1 MiB"
    )
    max_url_bytes: int | None = setting(
        None, "Longest URL in bytes; longer ones are answered 414.", default_text="8 KiB"
    )
    max_header_count: int | None = setting(
        None, "Most header lines of a request; more are answered 431.", default_text="100"
    )
    max_header_bytes: int | None = setting(
        None,
        "Largest size of a request's header lines together, in bytes; larger ones are answered "
        "431.",
        default_text="32 KiB",
    )
    header_timeout: float | None = setting(
        None,
        "Seconds a connection has to send a whole request head, from its opening or its previous "
        "answer; then it is closed.",
        default_text="10",
    )
    keep_alive_timeout: float | None = setting(
        None, "Seconds an idle connection is kept open between requests.", default_text="5"
    )
    relay_lease: float | None = setting(
        None,
        "How long the outbox relay holds the rows it claimed (and those its process's commits "
        "handed it), in seconds; rows a crashed replica held wait that long.",
        default_text="60",
    )
    redelivery_wait: float | None = setting(
        None,
        "How long a broker message a consumer fetched and never settled (its replica was killed) "
        "waits before another consumer gets it, in seconds (a broker URL's ?ack_wait= wins for "
        "its broker). Shorter: a crash delays the work less, but a consumer that stalls that "
        "long (a blocking extern call) has its message run elsewhere too. The same for every "
        "deployable.",
        default_text="30",
    )
    flow_peer_timeout: float | None = setting(
        None,
        "How long the console's flow of one correlation waits for each other deployable's answer "
        "(the --api URLs), in seconds; one that does not answer in time is named, and the flow "
        "shows the others.",
        default_text="2",
    )
    idempotency_ttl: float | None = setting(
        None, "How long an Idempotency-Key is remembered, in seconds.", default_text="86400"
    )
    pool_size: int | None = setting(
        None, "Database connections each replica keeps open.", default_text=str(DEFAULT_POOL_SIZE)
    )
    pool_overflow: int | None = setting(
        None,
        "More connections a replica may open under load, closed again after.",
        default_text=str(DEFAULT_POOL_OVERFLOW),
    )
    pool_timeout: float | None = setting(
        None,
        "Seconds a request waits for a database connection before it answers 503.",
        default_text=f"{DEFAULT_POOL_TIMEOUT:g}",
    )
    log_format: str | None = setting(
        None,
        "How the service writes its log lines: json, one JSON object per line (for machines), or "
        "text, one readable line each, in colour on a terminal (docs/observability.md#logs).",
        default_text="json",
        metavar="json|text",
    )
    no_metrics: bool = setting(
        False, "Serve no GET /metrics and count nothing (docs/observability.md)."
    )
    metrics_public: bool = setting(
        False,
        "Serve GET /metrics to every caller even when bearer tokens are verified (else it needs "
        "the role admin).",
    )
    no_console: bool = setting(False, "Serve no web console at /_loom/ (docs/console.md).")
    console_public: bool = setting(
        False,
        "Serve the console to every address when no bearer tokens are verified (else only to "
        "loopback; with tokens verified it needs the role admin either way).",
    )
    console_read_only: bool = setting(
        False,
        "The console shows and never acts: no fire or redrive button, and its action routes "
        "answer 403.",
    )
    otel_endpoint: str | None = setting(
        None,
        "Export OpenTelemetry traces over OTLP/HTTP to this collector base URL (/v1/traces is "
        "added). Without it the standard OTEL_EXPORTER_OTLP_* variables decide; with neither, "
        "nothing is traced (docs/observability.md#traces).",
        metavar="URL",
    )
    migrate: bool = setting(
        False,
        "Apply pending migrations first; with no migrations/ folder, apply additive changes (new "
        "tables, new optional or defaulted fields) directly.",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # the command line (given as arguments), then the environment: no .env file, no secrets
        # folder
        return init_settings, _Environment(settings_cls)

    def variables(self) -> dict[str, str]:
        """The environment variables of the service options that have a value: what the
        runtime reads when the service is built (and what each `loom run` child of `loom up`
        reads back)."""
        return self._variables(ServiceSettings.model_fields)

    def _variables(self, fields: Mapping[str, FieldInfo]) -> dict[str, str]:
        found: dict[str, str] = {}
        for name, field in fields.items():
            text = _text(getattr(self, name))
            if text is not None and extra(field, "family") is None:
                found[variable(name, field)] = text
        return found


class RunSettings(ServiceSettings):
    """Every option of `loom run`: those of every deployable (`ServiceSettings`) and these, which
    name this one service and where it listens."""

    database_url: str | None = setting(
        None,
        "SQLAlchemy async URL.",
        default_text="a SQLite file beside the first model file",
        metavar="URL",
    )
    host: str = setting("127.0.0.1", "Interface to listen on.")
    port: int = setting(
        8000,
        "Port to listen on (0: any free port).",
        between=(0, 65535, "0 to 65535 (0: any free port)"),
    )
    contexts: str | None = setting(
        None,
        "Serve only these contexts (comma-separated: Orders,Payment), with their own database "
        "(`<contexts>.db` beside the model, e.g. `orders-payment.db`).",
        metavar="A,B",
    )
    deployable: str | None = setting(
        None,
        "Serve one declared deployable's contexts, with its own database (`<deployable>.db` beside "
        "the model). Not with --contexts.",
        metavar="NAME",
    )
    broker: list[str] = setting(
        [],
        "A broker, repeatable: NAME=URL puts channel source NAME on URL; a bare URL is the "
        "broker of every durable channel with no source. E.g. --broker nats://127.0.0.1:4222.",
        family="LOOM_BROKER_<NAME>, LOOM_BROKER",
        metavar="[NAME=]URL",
    )
    api: list[str] = setting(
        [],
        "CONTEXT=URL, repeatable: the base URL of the deployable serving a context this one "
        "calls through a `resource { kind: api }`. E.g. --api Directory=http://127.0.0.1:8001.",
        family="LOOM_API_<CONTEXT>",
        metavar="CONTEXT=URL",
    )

    def all_variables(self) -> dict[str, str]:
        """The variables of every option that has a value, `loom run`'s own too, the repeated
        ones (`--broker`, `--api`) aside: how `loom run --reload` hands its options to each
        `loom run` it starts (as `loom up` does, nothing of them shows in `ps`)."""
        return self._variables(RunSettings.model_fields)


def _text(value: object) -> str | None:
    """A value as its variable holds it; None for one not given (a flag not set)."""
    if value is None or value is False:
        return None
    if value is True:
        return "true"
    # a whole float as the user typed it (`--pool-timeout 0` is refused as '0', not '0.0')
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class SettingsError(Exception):
    """A value of the wrong type, worded in one line that names where it came from."""


_KINDS = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}
_OUT_OF_RANGE = {"greater_than_equal", "less_than_equal"}


def load(cls: type[S], given: Mapping[str, Any]) -> S:
    """The settings of `cls` from `given` (the command line's values by field name; None or an
    empty list: not given), the environment and the defaults. SettingsError on a bad value."""
    given = {name: value for name, value in given.items() if value not in (None, [], ())}
    try:
        return cls(**given)
    except ValidationError as exc:
        raise SettingsError("; ".join(_sentence(cls, e, given) for e in exc.errors())) from None


def _sentence(cls: type[ServiceSettings], error: Any, given: Mapping[str, Any]) -> str:
    fields = cls.model_fields
    key = str(error["loc"][0]) if error["loc"] else ""
    name = next((n for n, f in fields.items() if key in (n, f.validation_alias)), key)
    field = fields.get(name)
    if field is None:
        return str(error["msg"])
    where = "--" + name.replace("_", "-") if name in given else variable(name, field)
    what = extra(field, "between") if error["type"] in _OUT_OF_RANGE else None
    what = what or _KINDS.get(value_kind(field), "valid")
    return f"{where} must be {what}, not {error['input']!r}"
