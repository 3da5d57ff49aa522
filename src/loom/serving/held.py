"""Which service a command line names: the contexts it holds (`--contexts`, `--deployable`), or
the whole model. Plain functions over names, so `loom run`, `loom up`, `loom migrate` and the tests
share them; each refusal is a sentence for the user.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from loom.model import naming

if TYPE_CHECKING:  # the IR only as a type: `loom run` of a built model never loads it
    from loom.model import ir


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
        default database is `<name>.db` (`loom.serving.database`), its migrations
        `migrations/<name>/`."""
        if self.deployable is not None:
            return naming.snake(self.deployable)
        if self.contexts is not None:
            return "-".join(naming.snake(c) for c in sorted(self.contexts))
        return None

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
                raise OptionError(unknown("deployable", self.deployable, declared, "deployables"))
            return tuple(declared[self.deployable])
        for name in self.contexts or ():
            if name not in known:
                raise OptionError(unknown("context", name, known, "contexts"))
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


def unknown(what: str, name: str, known: Iterable[str], plural: str) -> str:
    # imported here, not at the top: a run whose build is reused never loads the compiler; this
    # is only reached once the model was compiled
    from loom.lang.diagnostics import did_you_mean

    names = list(known)
    hint = did_you_mean(name, names)
    listed = f"its {plural}: {', '.join(names)}" if names else f"it declares no {plural}"
    return f"the model has no {what} `{name}` ({hint + ' ' if hint else ''}{listed})"
