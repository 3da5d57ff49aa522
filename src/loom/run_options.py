"""What `loom run` serves and with what: the contexts it holds (`--contexts`, `--deployable`), the
database it defaults to, the brokers it is given (`--broker`) and where the contexts it calls run
(`--api`). Plain functions over names, so
`loom run`, `loom up` and the tests share them; each refusal is a sentence for the user.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from loom.build import default_sqlite_url
from loom.model import ir, naming

# `--broker NAME=URL`: NAME is a channel source's name, as the model declares it
_SOURCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


class OptionError(Exception):
    """A command line naming something the model does not have, or spelt wrong."""


@dataclass(frozen=True)
class Held:
    """The contexts one service runs, as the command line names them: `--contexts A,B`
    (`contexts`), `--deployable NAME` (`deployable`), or neither (the whole model). Which
    contexts a deployable holds is known once the model is compiled (`resolve`)."""

    contexts: tuple[str, ...] | None = None
    deployable: str | None = None

    def name(self) -> str | None:
        """What this service's files beside the model are named after (None: the whole model):
        a deployable's name, a set of contexts' sorted names joined by `-`, in snake case. Its
        default database is `<name>.db`, its migrations `migrations/<name>/`."""
        if self.deployable is not None:
            return naming.snake(self.deployable)
        if self.contexts is not None:
            return "-".join(naming.snake(c) for c in sorted(self.contexts))
        return None

    def database_name(self) -> str | None:
        """The default SQLite file's name (None: the model's own, `<first file>.db`)."""
        name = self.name()
        return None if name is None else f"{name}.db"

    def args(self) -> str:
        """The command-line flags naming this service, to repeat in a suggested command
        (" --deployable Warehouse"; "" for the whole model)."""
        if self.deployable is not None:
            return f" --deployable {self.deployable}"
        if self.contexts is not None:
            return f" --contexts {','.join(self.contexts)}"
        return ""

    def key(self) -> str:
        """What the build cache keys this service by beside the model's files ("" for the whole
        model, whose builds keep the key they always had)."""
        if self.deployable is not None:
            return f"deployable {self.deployable}"
        if self.contexts is not None:
            return "contexts " + ",".join(sorted(self.contexts))
        return ""

    def resolve(
        self, known: Sequence[str], declared: Mapping[str, Sequence[str]]
    ) -> tuple[str, ...] | None:
        """The contexts to generate (None: all), given the model's contexts and its declared
        deployables (name -> contexts); a name the model does not have is refused."""
        if self.deployable is not None:
            if self.deployable not in declared:
                raise OptionError(_unknown("deployable", self.deployable, declared, "deployables"))
            return tuple(declared[self.deployable])
        for name in self.contexts or ():
            if name not in known:
                raise OptionError(_unknown("context", name, known, "contexts"))
        return self.contexts


def declared_deployables(model: ir.Model) -> dict[str, tuple[str, ...]]:
    """The model's declared deployables: name -> the contexts it holds, in declaration order."""
    return {d.name: d.contexts for d in model.deployables}


def refuse_unknown_held(files: Sequence[Path], held: Held) -> None:
    """Raise OptionError when `held` names a deployable or context the model (`files`) does not
    have, naming the model's own; commands that only read a service's folder or database would
    otherwise answer about a service that does not exist. A model that does not compile is not
    judged here (the command that needs it says why)."""
    if held.name() is None:
        return
    # imported here, not at the top: only a command naming a service compiles the model for it
    from loom.lang import compile_files

    model = compile_files(list(files)).model
    if model is not None:
        held.resolve([c.name for c in model.contexts], declared_deployables(model))


def held_for(contexts: str | None, deployable: str | None) -> Held:
    """The Held of `--contexts A,B` or `--deployable NAME` (at most one of them)."""
    if contexts is not None and deployable is not None:
        raise OptionError("give --contexts or --deployable, not both")
    if deployable is not None:
        return Held(deployable=deployable)
    if contexts is None:
        return Held()
    names = [c.strip() for c in contexts.split(",")]
    if not all(names):
        raise OptionError(
            f"--contexts {contexts!r}: name the contexts separated by commas, e.g. Orders,Payment"
        )
    return Held(tuple(dict.fromkeys(names)))


def _unknown(what: str, name: str, known: Iterable[str], plural: str) -> str:
    # imported here, not at the top: a run whose build is reused never loads the compiler; this
    # is only reached once the model was compiled
    from loom.lang.diagnostics import did_you_mean

    names = list(known)
    hint = did_you_mean(name, names)
    listed = f"its {plural}: {', '.join(names)}" if names else f"it declares no {plural}"
    return f"the model has no {what} `{name}` ({hint + ' ' if hint else ''}{listed})"


def default_database(first_file: Path, held: Held) -> str:
    """The SQLite file beside the first model file that `loom run` uses without --database-url."""
    name = held.database_name()
    if name is None:
        return default_sqlite_url(first_file)
    return f"sqlite+aiosqlite:///{default_database_file(first_file, held)}"


def default_database_file(first_file: Path, held: Held) -> Path:
    """The file of `default_database`."""
    name = held.database_name()
    return (
        first_file.resolve().with_suffix(".db")
        if name is None
        else first_file.resolve().parent / name
    )


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
                "--broker: " + _unknown("channel source", name, sources, "channel sources")
            )
    known = {c.upper() for c in contexts}
    for name in parse_apis(apis):
        if name.upper() not in known:
            raise OptionError("--api: " + _unknown("context", name, contexts, "contexts"))


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
