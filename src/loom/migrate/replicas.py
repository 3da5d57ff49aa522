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


def _breaking(
    revisions: Sequence[Revision], revision: Revision, alive: Sequence[ReplicaRow]
) -> Breaking | None:
    at = list(revisions).index(revision)
    before = revisions[at - 1].snapshot() if at else empty()
    after = revision.snapshot()
    opened, kept = after.get("expand"), before.get("expand")
    if opened is not None and kept is None:
        return None  # an expand: written for the previous code to keep running on it
    # a contract breaks only the code from before its expand: a replica that started on the
    # expand or later runs the new code (the old one is refused a start then)
    since = kept["revision"] if kept is not None and opened is None else revision.number
    older = [r for r in alive if r.revision is None or r.revision < since]
    steps = [s for s in diff(before, after) if not s.compatible] if older else []
    return Breaking(revision, steps, older) if steps else None


def breaking_under(
    revisions: Sequence[Revision], pending: Sequence[Revision], alive: Sequence[ReplicaRow]
) -> list[Breaking]:
    """The pending revisions that break the code of a replica alive on a revision before them
    (before its expand, for a contract)."""
    found = (_breaking(revisions, revision, alive) for revision in pending)
    return [b for b in found if b is not None]
