"""The plan of the next migration: the steps from the last snapshot to the model's schema, their
words and lint findings, and writing it as the next revision (script and snapshot)."""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from loom.lang.render import render_one, summary
from loom.migrate.diff import diff
from loom.migrate.folder import MigrationsError, Revision, next_name, relative_source
from loom.migrate.lint import DATA_LOSS, Finding, lint
from loom.migrate.script import render_script
from loom.migrate.snapshot import Snapshot, dumps
from loom.migrate.steps import Step

__all__ = ["Plan", "make_plan", "write_revision"]


@dataclass(frozen=True)
class Plan:
    steps: list[Step]
    findings: list[Finding]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.diagnostic.severity == "error"]

    @property
    def data_loss(self) -> list[Finding]:
        return [f for f in self.findings if f.diagnostic.code in DATA_LOSS]

    @property
    def additive(self) -> bool:
        """Every step compatible with the running code and without a finding that blocks: what
        `loom run --migrate` applies without a migrations folder."""
        return all(s.compatible for s in self.steps) and not self.errors and not self.data_loss

    def lines(self) -> list[str]:
        """One line per step, in words."""
        return [s.describe() for s in self.steps]

    def render(self, sources: Mapping[str, str], *, color: bool = False) -> str:
        """The plan, one numbered line per step with its compatibility and finding codes, then
        each finding rendered like the compiler's diagnostics."""
        out = []
        for n, step in enumerate(self.steps, start=1):
            codes = [f.diagnostic.code for f in self.findings if f.step == n - 1]
            compat = (
                "compatible with the running code" if step.compatible else "breaks the running code"
            )
            tail = f"  [{', '.join(codes)}]" if codes else ""
            out.append(f"  {n}. {step.describe()} ({compat}){tail}")
        blocks = [
            render_one(f.diagnostic, {} if f.old_model else sources, color=color)
            for f in self.findings
        ]
        if blocks:
            out += ["", "\n\n".join(blocks), "", summary([f.diagnostic for f in self.findings])]
        return "\n".join(out)


def make_plan(
    old: Snapshot,
    new: Snapshot,
    *,
    fallback_file: str,
    old_label: str = "the last migration",
    steps: list[Step] | None = None,
) -> Plan:
    """The steps from `old` to `new` (their diff, unless `steps` gives them: an expand's or a
    contract's, `loom.migrate.rolling`) and their findings; `old_label` names the old model in
    the places of findings about what it had (`store.loom (as of 0002_add_note):12:5`)."""
    steps = diff(old, new) if steps is None else steps
    findings = lint(steps, old, new, fallback_file=fallback_file, old_label=old_label)
    return Plan(steps, findings)


def write_revision(
    folder: Path,
    existing: list[Revision],
    message: str,
    plan: Plan,
    snapshot: Snapshot,
    root: Path | None = None,
) -> Revision:
    """Write the next revision's script and snapshot into `folder` (the snapshot first, then the
    script under its final name, so an interrupted write leaves no half a revision behind); the
    snapshot's sources relative to the model's folder `root` (default: `folder`'s parent)."""
    stem = next_name(existing, message)
    number = stem[:4]
    down = existing[-1].number if existing else None
    script = render_script(number, down, message, plan.lines(), plan.steps)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write(folder / f"{stem}.json", dumps(_relative_sources(snapshot, root or folder.parent)))
        _write(folder / f"{stem}.py", script)
    except OSError as exc:
        raise MigrationsError(f"cannot write into {folder}: {exc.strerror}") from None
    return Revision(number, folder / f"{stem}.py")


def _relative_sources(snapshot: Snapshot, root: Path) -> Snapshot:
    """`snapshot` with each source relative to the model's folder: the snapshot reads the same
    whichever folder `loom migrate new` ran in."""

    out = copy.deepcopy(snapshot)
    for table in out["tables"].values():
        table["source"] = relative_source(table["source"], root)
        for column in table["columns"]:
            column["source"] = relative_source(column["source"], root)
    return out


def _write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)
