"""The `key: value` settings of a channel, a resource, a deployable and a channel source: each key
known and given once, checked alike for all four."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.diagnostics import did_you_mean
from loom.lang.syntax import ast


def known_settings(
    ck: Checker,
    code: str,
    noun: str,
    decl: ast.Channel | ast.Resource | ast.Deployable | ast.ChannelSource,
    known: tuple[str, ...],
) -> dict[str, ast.ChannelSetting]:
    """The known settings of `decl` by key (the first of each); an unknown or a repeated one is
    reported under `code`."""
    what = f"{noun} `{decl.name}`"
    seen: dict[str, ast.ChannelSetting] = {}
    for s in decl.settings:
        if s.key not in known:
            listed = ", ".join(f"`{k}`" for k in known[:-1])
            ck.report(
                code,
                f"{what} has no setting `{s.key}`",
                s.key_span,
                "unknown setting",
                help=did_you_mean(s.key, known)
                or f"a {noun} has "
                + (f"{listed} and `{known[-1]}`" if listed else f"`{known[-1]}` only"),
            )
        elif s.key in seen:
            ck.report(
                code,
                f"`{s.key}` is given twice in {what}",
                s.key_span,
                "given again here",
                secondary=[(seen[s.key].key_span, "first given here")],
                help="give each setting once",
            )
        else:
            seen[s.key] = s
    return seen
