"""`loom fix handle`: lift a workflow's leftover `handle name(params) { body }` members into
context-level `commandHandler name(params) { body }` declarations (see docs/codemods.md).

The rewrite is textual and driven by spans, so everything it does not move (comments, blank lines,
formatting) stays byte-for-byte. It does not use the compiler's parser: that parser keeps only the
name of a `handle` member, and a file being migrated may hold other errors the parser would stop
at. Instead a small scanner here tokenises the file with the grammar's own terminals (names,
strings, numbers, comments), matches brackets, and reads just the structure the codemod needs:
contexts, their workflows / handlers / repositories / aggregates, and the members of each workflow.

A handle with no faithful rewrite stays where it is, with a `// not lifted — <reason>` comment
above it. A member already carrying that comment is left alone, so a second run is a no-op.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loom.codemod.scan import CodemodError, Context, Handle, Scanned, Text, Workflow, name_at, scan
from loom.lang.check.reads import READS

MARKER = "// not lifted — "
# Markers written by other tools (the TypeScript codemod the spec mentions) count as marked too.
_MARKER_RE = re.compile(r"//\s*(?:codemod-workflow-handle:\s*)?not lifted\s*(?:—|--|-)\s*(.*)$")


# --------------------------------------------------------------------------------------------------
# Results


@dataclass
class Lifted:
    name: str
    workflow: str
    line: int
    column: int


@dataclass
class LeftInPlace:
    name: str
    workflow: str
    line: int  # in the rewritten text (equal to the original when nothing was written before it)
    column: int
    reason: str
    already_marked: bool = False
    original_line: int = 0  # in the text as it was read (what `--check` reports)
    original_column: int = 0


@dataclass
class FileResult:
    path: str
    original: str
    text: str  # the rewritten text (== original when nothing changes)
    lifted: list[Lifted] = field(default_factory=list)
    left: list[LeftInPlace] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # unreadable / unscannable: the file is left untouched
    io_error: bool = False  # the error is reading or writing the file, not its text

    @property
    def changed(self) -> bool:
        return self.error is None and self.text != self.original


# --------------------------------------------------------------------------------------------------
# Analysis


def _reasons(
    sc: Scanned, ctx: Context, wf: Workflow, h: Handle, reserved: dict[str, str]
) -> list[str]:
    toks = sc.toks
    out: list[str] = []
    if wf.event_sourced:
        out.append(f"workflow `{wf.name}` is eventSourced")
    header_words = [toks[i].text for i in h.header]
    # a `requires` gate in the header moves with it: a commandHandler takes one in the same place
    gate_at = header_words.index("requires") if "requires" in header_words else len(h.header)
    before, gate = header_words[:gate_at], h.header[gate_at + 1 :]
    body = range(h.body_open + 1, h.body_close)
    gate_in_body = any(
        toks[i].text == "requires" and toks[i - 1].text != "." and toks[i + 1].text != ":"
        for i in body
    )
    if gate_in_body:
        out.append(
            "it has a `requires` statement in its body (a gate is written in the header: "
            "`commandHandler name(…) requires … { … }`)"
        )
    elif before and not (before[0] == ":" and len(before) > 1):
        shown = " ".join(header_words)
        out.append(f"its header has `{shown}`, which a commandHandler does not take")
    gated = [
        toks[i].text
        for i in gate
        if toks[i].kind == "name"
        and toks[i - 1].text != "."
        and toks[i].text in wf.state
        and toks[i].text not in h.params
    ]
    if gated:
        shown = ", ".join(f"`{s}`" for s in dict.fromkeys(gated))
        out.append(f"its `requires` gate reads the workflow's own state ({shown})")
    if "id" in h.params:
        out.append("a parameter is named `id`")

    params = set(h.params)
    locals_: set[str] = set()
    for i in body:
        t = toks[i]
        if t.text in ("let", "for") and toks[i + 1].kind == "name" and toks[i - 1].text != ".":
            locals_.add(toks[i + 1].text)
    state_reads: list[str] = []
    helper_calls: list[str] = []
    aggregates: list[str] = []

    def note(lst: list[str], item: str) -> None:
        if item not in lst:
            lst.append(item)

    for i in body:
        t = toks[i]
        if t.kind != "name" or toks[i - 1].text == ".":
            continue
        nxt = toks[i + 1].text if i + 1 < len(toks) else ""
        if nxt == ":" and toks[i - 1].text in ("{", ",", "("):
            continue  # a record entry / named argument key
        if toks[i - 1].text in ("let", "for"):
            continue  # the binding itself
        name = t.text
        if name == "this":
            note(state_reads, "this")
            continue
        if name in wf.functions and nxt == "(" and name not in params:
            note(helper_calls, name)
            continue
        if name in wf.state and name not in params:
            note(state_reads, name)  # a `let` of the same name is no proof it is not the field
            continue
        if name in params or name in locals_:
            continue
        if name in ctx.repositories:
            note(aggregates, ctx.repositories[name])
        elif name in ctx.aggregates and nxt == ".":
            note(aggregates, name)
        elif nxt == "." and name_at(toks, i + 2) in READS and name[:1].isupper():
            note(aggregates, f"the aggregate of `{name}`")  # a repository declared elsewhere
    if state_reads:
        shown = ", ".join(f"`{s}`" for s in state_reads)
        out.append(f"the body reads the workflow's own state ({shown})")
    if helper_calls:
        shown = ", ".join(f"`{s}`" for s in helper_calls)
        out.append(f"the body calls the workflow's function ({shown})")
    if len(aggregates) > 1:
        shown = ", ".join(a if a.startswith("the ") else f"`{a}`" for a in aggregates)
        out.append(f"the body reaches more than one aggregate ({shown})")
    if h.name in ctx.handlers:
        out.append(f"the name `{h.name}` is already taken by {ctx.handlers[h.name]} `{h.name}`")
    elif h.name in reserved:
        out.append(
            f"the name `{h.name}` is already taken by the handle lifted from workflow "
            f"`{reserved[h.name]}`"
        )
    return out


def _marker_of(src: Text, offset: int) -> str | None:
    """The reason of a `not lifted` marker in the comment lines right above `offset`'s line."""
    text = src.text
    start = src.line_start(offset)
    if text[start:offset].strip():
        return None
    while start > 0:
        prev_start = src.line_start(start - 1)
        line = text[prev_start:start].strip()
        if not (line.startswith("//") or (line.startswith("/*") and line.endswith("*/"))):
            return None
        m = _MARKER_RE.search(line)
        if m:
            return m.group(1).strip() or "marked"
        start = prev_start
    return None


# --------------------------------------------------------------------------------------------------
# Rewriting


def _indent_of(src: Text, offset: int) -> str:
    start = src.line_start(offset)
    line = src.text[start : src.line_end(start)]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _is_blank(s: str) -> bool:
    return not s.strip()


def _only_comment(s: str) -> bool:
    s = s.strip()
    return not s or s.startswith("//") or (s.startswith("/*") and s.endswith("*/"))


@dataclass
class _Edit:
    start: int
    end: int
    text: str


def _dedent(text: str, by: int, first_indent: str | None) -> str:
    lines = text.split("\n")
    out = []
    for n, line in enumerate(lines):
        stripped = line[: len(line) - len(line.lstrip(" \t"))]
        cut = min(by, len(stripped))
        new = line[cut:]
        if n == 0 and first_indent is not None:
            new = first_indent + line.lstrip(" \t")
        out.append(new)
    return "\n".join(out)


def _rewrite_workflow(
    sc: Scanned,
    wf: Workflow,
    lifted: list[Handle],
    marked: list[tuple[Handle, str]],
    nl: str,
) -> list[_Edit]:
    src, toks, text = sc.src, sc.toks, sc.src.text
    edits: list[_Edit] = []
    wf_indent = _indent_of(src, toks[wf.kw].start)
    moved: list[str] = []
    removals: list[list[int]] = []
    for h in lifted:
        start, end = toks[h.kw].start, toks[h.body_close].end
        line_start = src.line_start(start)
        at_line_start = _is_blank(text[line_start:start])
        h_indent = _indent_of(src, start) if at_line_start else ""
        # The lifted declaration: `handle` -> `commandHandler`, the workflow's transaction mode
        # carried over, everything else verbatim.
        pieces = ["commandHandler", text[toks[h.kw].end : toks[h.body_open].start]]
        if wf.transactional is not None:
            last = h.header[-1] if h.header else h.params_close
            cut = toks[last].end - toks[h.kw].end
            mode = "transactional" + (f"({wf.transactional})" if wf.transactional else "")
            pieces[1] = pieces[1][:cut] + " " + mode + pieces[1][cut:]
        pieces.append(text[toks[h.body_open].start : end])
        decl = "".join(pieces)
        if at_line_start:
            # Attached comment lines above the member travel with it.
            region_start = line_start
            while region_start > 0:
                prev = src.line_start(region_start - 1)
                line = text[prev:region_start]
                if _is_blank(line) or not _only_comment(line):
                    break
                region_start = prev
            lead = text[region_start:line_start]
            le = src.line_end(end)
            trail = text[end:le]
            if _only_comment(trail):
                region_end = min(le + 1, len(text))
                if trail.strip():
                    decl += trail.rstrip("\r \t")  # a comment after the `}` travels too
            else:
                region_end = end
            block = lead + h_indent + decl
            by = max(0, len(h_indent) - len(wf_indent))
            block = _dedent(block.replace("\r\n", "\n"), by, None)
            moved.append(block.replace("\n", nl))
        else:
            region_start = start
            while region_start > 0 and text[region_start - 1] in " \t":
                region_start -= 1
            region_end = end
            by = max(0, len(_indent_of(src, start)) - len(wf_indent))
            moved.append(
                _dedent((wf_indent + decl).replace("\r\n", "\n"), by, wf_indent).replace("\n", nl)
            )
        if removals and removals[-1][1] == region_start:
            removals[-1][1] = region_end
        else:
            removals.append([region_start, region_end])
    wf_close_line = src.line_start(toks[wf.close].start)
    for region_start, region_end in removals:
        r_start, r_end = region_start, region_end
        if r_start == src.line_start(r_start) and r_end < len(text) and text[r_end - 1] != "\n":
            le = src.line_end(r_end)
            if _is_blank(text[r_end:le]):
                r_end = min(le + 1, len(text))  # the whole line goes
        full_lines = r_start == src.line_start(r_start) and (
            r_end == len(text) or text[r_end - 1] == "\n"
        )
        if full_lines:
            probe = r_end
            while probe < len(text) and probe != wf_close_line:
                le = src.line_end(probe)
                if not _is_blank(text[probe:le]):
                    break
                probe = le + 1
            if probe == wf_close_line:
                r_end = probe  # only blank lines between the member and the workflow's `}`
            after_line = text[r_end : src.line_end(r_end)] if r_end < len(text) else ""
            if _is_blank(after_line) or r_end == wf_close_line:
                # Do not leave the blank lines that separated the removed member behind.
                while r_start > 0:
                    before = src.line_start(r_start - 1)
                    if not _is_blank(text[before:r_start]):
                        break
                    r_start = before
        edits.append(_Edit(r_start, r_end, ""))
    for h, reason in marked:
        start = toks[h.kw].start
        line_start = src.line_start(start)
        if _is_blank(text[line_start:start]):
            ind = text[line_start:start]
            edits.append(_Edit(line_start, line_start, f"{ind}{MARKER}{reason}{nl}"))
        else:
            ind = wf_indent + "  "
            cut = start
            while text[cut - 1] in " \t":
                cut -= 1
            edits.append(_Edit(cut, start, f"{nl}{ind}{MARKER}{reason}{nl}{ind}"))
    if moved:
        close_end = toks[wf.close].end
        le = src.line_end(close_end)
        rest = text[close_end:le]
        block = nl.join(nl + m if n else m for n, m in enumerate(moved))
        if _only_comment(rest):
            at = le - 1 if le > close_end and text[le - 1] == "\r" else le
            edits.append(_Edit(at, at, nl + block))
        else:
            edits.append(_Edit(close_end, close_end, nl + block + nl))
    return edits


def _apply(text: str, edits: list[_Edit]) -> str:
    out = text
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: e.start] + e.text + out[e.end :]
    return out


def _shift(offset: int, edits: list[_Edit]) -> int:
    """Where `offset` of the original text lands after `edits` (it is outside every removal)."""
    delta = 0
    for e in edits:
        if e.end <= offset and (e.start < offset or e.start == e.end):
            delta += len(e.text) - (e.end - e.start)
    return offset + delta


# --------------------------------------------------------------------------------------------------
# Entry points


def fix_sources(sources: Mapping[str, str]) -> dict[str, FileResult]:
    """Rewrite in-memory texts (name -> text). The files are taken as one model: a context split
    across several of them shares one set of handler names."""
    results: dict[str, FileResult] = {}
    scanned: dict[str, Scanned] = {}
    merged: dict[str, Context] = {}
    for name, text in sources.items():
        try:
            sc = scan(text)
        except CodemodError as exc:
            results[name] = FileResult(
                name, text, text, error=f"{name}:{exc.line}:{exc.column}: {exc.message}"
            )
            continue
        scanned[name] = sc
        for ctx in sc.contexts:
            m = merged.setdefault(ctx.name, Context(ctx.name))
            for k, v in ctx.handlers.items():
                m.handlers.setdefault(k, v)
            m.repositories.update(ctx.repositories)
            m.aggregates |= ctx.aggregates
    reserved: dict[str, dict[str, str]] = {}
    for name, sc in scanned.items():
        text = sources[name]
        nl = "\r\n" if "\r\n" in text else "\n"
        result = FileResult(name, text, text)
        edits: list[_Edit] = []
        pending: list[tuple[Handle, Workflow, str, bool]] = []
        for ctx in sc.contexts:
            index = merged[ctx.name]
            names = reserved.setdefault(ctx.name, {})
            for wf in ctx.workflows:
                lifted: list[Handle] = []
                marked: list[tuple[Handle, str]] = []
                for h in wf.handles:
                    earlier = _marker_of(sc.src, sc.toks[h.kw].start)
                    if earlier is not None:
                        pending.append((h, wf, earlier, True))
                        continue
                    reasons = _reasons(sc, index, wf, h, names)
                    if reasons:
                        reason = "; ".join(reasons)
                        marked.append((h, reason))
                        pending.append((h, wf, reason, False))
                    else:
                        lifted.append(h)
                        names[h.name] = wf.name
                        line, col = sc.src.pos(sc.toks[h.kw].start)
                        result.lifted.append(Lifted(h.name, wf.name, line, col))
                if lifted and not wf.other_members and len(lifted) == len(wf.handles):
                    result.notes.append(
                        f"workflow `{wf.name}` has no member left; give it a `create` or delete it"
                    )
                edits += _rewrite_workflow(sc, wf, lifted, marked, nl)
        new = _apply(text, edits)
        new_src = Text(new)
        for h, wf, why, already in pending:
            line, col = new_src.pos(_shift(sc.toks[h.kw].start, edits))
            oline, ocol = sc.src.pos(sc.toks[h.kw].start)
            result.left.append(LeftInPlace(h.name, wf.name, line, col, why, already, oline, ocol))
        result.left.sort(key=lambda x: (x.line, x.column))
        result.text = new
        try:
            scan(new)  # the rewrite must itself be well-formed
        except CodemodError as exc:  # pragma: no cover - a bug in this module
            result.text = text
            result.error = f"{name}: internal error, file left unchanged: {exc.message}"
        results[name] = result
    return {name: results[name] for name in sources}


_BOM = "\ufeff"


def loom_files(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """The files named, with every `*.loom` below a named folder; and the paths that do not exist."""
    files: list[Path] = []
    missing: list[str] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*.loom") if q.is_file()))
        elif p.exists():
            files.append(p)
        else:
            missing.append(str(p))
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, missing


def fix_files(files: Sequence[Path], *, write: bool) -> list[FileResult]:
    """Read, rewrite and (when `write`) save the given files. Never raises for a bad file."""
    sources: dict[str, str] = {}
    boms: dict[str, bool] = {}
    unreadable: dict[str, FileResult] = {}
    for f in files:
        name = str(f)
        try:
            raw = f.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if isinstance(exc, UnicodeDecodeError):
                reason = "not UTF-8 text"
            unreadable[name] = FileResult(
                name, "", "", error=f"{name}: cannot read: {reason}", io_error=True
            )
            continue
        boms[name] = raw.startswith(_BOM)
        sources[name] = raw[1:] if boms[name] else raw
    fixed = fix_sources(sources)
    out: list[FileResult] = []
    for f in files:
        name = str(f)
        if name in unreadable:
            out.append(unreadable[name])
            continue
        r = fixed[name]
        if write and r.changed:
            try:
                f.write_bytes(((_BOM if boms[name] else "") + r.text).encode("utf-8"))
            except OSError as exc:
                r.error = f"{name}: cannot write: {exc.strerror or exc}"
                r.io_error = True
        out.append(r)
    return out
