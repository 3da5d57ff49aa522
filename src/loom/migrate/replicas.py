"""Whether `loom migrate apply` may apply what is pending while replicas serve (issue 26 §5.10):
a pending revision with a step the previous code cannot run against (the lint's
`loom.migrate-breaks-running-code`: a drop, a rename, a rewrite of stored values ...) is refused
while a replica that started on an older revision is alive (`loom.runtime.storage.replicas`),
naming them, unless `--force` (docs/migrations.md#replicas-and-breaking-steps)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loom.migrate.diff import diff
from loom.migrate.folder import Revision
from loom.migrate.snapshot import empty
from loom.migrate.steps import Step
from loom.runtime.storage.replicas import ReplicaRow

__all__ = ["Breaking", "breaking_under"]


@dataclass(frozen=True)
class Breaking:
    """A pending revision that breaks the running code, and the older replicas serving."""

    revision: Revision
    steps: list[Step]
    replicas: list[ReplicaRow]


def _steps(revisions: Sequence[Revision], revision: Revision) -> list[Step]:
    at = list(revisions).index(revision)
    before = revisions[at - 1].snapshot() if at else empty()
    return [s for s in diff(before, revision.snapshot()) if not s.compatible]


def breaking_under(
    revisions: Sequence[Revision], pending: Sequence[Revision], alive: Sequence[ReplicaRow]
) -> list[Breaking]:
    """The pending revisions that break the code of a replica alive on a revision before them."""
    out = []
    for revision in pending:
        older = [r for r in alive if r.revision is None or r.revision < revision.number]
        if not older:
            continue
        steps = _steps(revisions, revision)
        if steps:
            out.append(Breaking(revision, steps, older))
    return out
