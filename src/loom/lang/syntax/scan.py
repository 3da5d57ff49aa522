"""The fast parser's tokens (`descent.py`): the whole text scanned at once with the grammar's own
terminals, and where lark's contextual lexer would read a word as a keyword.

lark's contextual lexer matches, in each parser state, only the terminals that state accepts, in a
fixed order; a word spelled like a keyword is that keyword only where the state accepts it. This
scanner matches every terminal, in that same order, so wherever the fast parser accepts the token it
finds, lark's lexer in that place finds the same one. The one difference left is a word spelled like
a keyword that the fast parser takes as a name: lark takes it as the keyword when the state after
the previous token accepts it. `reserved` answers that (see there); where it does, the fast parser
gives up and lark decides.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import importlib.util
import json
import operator
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom.lang.syntax.grammar import GRAMMAR, lark_parser

# The kind of a name, a literal or a number: lark's terminal names. A keyword's or a punctuation
# mark's kind is its own text (`operation`, `{`, `:=`).
NAME = "NAME"
END = "$END"
BAD = "$BAD"  # a character no terminal matches: no rule accepts it, so the fast parser gives up
_MARK = "MARK"  # the scanner's group of punctuation marks, whose kind is their text


@dataclass(frozen=True)
class _Grammar:
    scanner: re.Pattern[str]  # one match per token, the spaces and comments before it skipped
    kinds: list[str]  # regex group index -> kind
    keywords: frozenset[str]  # the words the grammar spells as keywords
    terminal_of: dict[str, str]  # a kind -> lark's terminal (`{` -> LBRACE, `when` -> WHEN)
    reserved_after: dict[str, frozenset[str]]  # lark terminal -> keyword terminals it may reserve
    reserved_at_start: frozenset[str]


@functools.cache
def grammar() -> _Grammar:
    """What the scanner and `reserved` read of the grammar. Derived from lark's parser, and kept in
    the temporary folder (as lark keeps its tables) keyed by the grammar, this file and lark's
    installation, so that a process whose texts all parse never loads lark."""
    cache = Path(tempfile.gettempdir()) / f"loom-scan-{_cache_key()}.json"
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = _derive()
        with contextlib.suppress(OSError):  # a folder that cannot be written: derived each time
            staged = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
            staged.write_text(json.dumps(data), encoding="utf-8")
            os.replace(staged, cache)
    return _Grammar(
        re.compile(data["pattern"], re.DOTALL),
        data["kinds"],
        frozenset(data["keywords"]),
        data["terminal_of"],
        {t: frozenset(k) for t, k in data["reserved_after"].items()},
        frozenset(data["reserved_at_start"]),
    )


def _cache_key() -> str:
    lark = importlib.util.find_spec("lark")
    where = Path(lark.origin) if lark is not None and lark.origin else None
    digest = hashlib.sha256(GRAMMAR.read_bytes() + Path(__file__).read_bytes())
    if where is not None:
        stat = where.stat()
        digest.update(f"{where}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _derive() -> dict[str, Any]:
    parser = lark_parser()
    ignore = set(parser.lexer_conf.ignore)
    words: dict[str, str] = {}
    skipped: list[str] = []
    marks: list[str] = []
    groups: list[tuple[str, str]] = []
    kind_of: dict[str, str] = {}
    # lark's own order of trying terminals (BasicLexer), so the first match is the one lark finds;
    # a space or a comment, wherever one matches, is the first that does
    for t in sorted(
        parser.terminals,
        key=lambda x: (-x.priority, -x.pattern.max_width, -len(x.pattern.value), x.name),
    ):
        is_text = t.pattern.type == "str"
        if is_text and t.pattern.value.isidentifier():
            words[t.pattern.value] = t.name  # matched as a NAME, then told apart (lark's "unless")
        elif t.name in ignore:
            skipped.append(t.pattern.to_regexp())
        elif is_text:
            marks.append(t.pattern.to_regexp())
        else:
            groups.append((t.name, t.pattern.to_regexp()))
            kind_of[t.name] = t.name
    # the punctuation marks come after every other terminal in that order: one group of them (a
    # mark's kind is its text) is several times faster to match than a group each
    groups.append((_MARK, "|".join(marks)))
    tokens = "|".join(f"(?P<{name}>{regexp})" for name, regexp in groups)
    # The skipping is atomic (never given back to find a token inside a comment), and the end of
    # the text is a token, so spaces and comments at the end are skipped too.
    skip = "|".join(skipped)
    pattern = f"(?>(?:{skip})*)(?:{tokens}|(?P<BAD>.)|(?P<END>\\Z))"
    scanner = re.compile(pattern, re.DOTALL)
    kind_of["BAD"] = BAD
    kind_of["END"] = END
    kind_of[_MARK] = _MARK
    kinds = [""] * (scanner.groups + 1)
    for name, index in scanner.groupindex.items():
        kinds[index] = kind_of[name]
    terminal_of = {
        (t.pattern.value if t.pattern.type == "str" else t.name): t.name for t in parser.terminals
    }
    table = parser.parser.parser._parse_table
    after: dict[str, set[str]] = {}
    for actions in table.states.values():
        for terminal, (action, target) in actions.items():
            if action.name == "Shift":
                after.setdefault(terminal, set()).update(table.states[target])
    keyword_terminals = set(words.values())
    start = table.states[table.start_states["start"]]
    return {
        "pattern": pattern,
        "kinds": kinds,
        "keywords": sorted(words),
        "terminal_of": terminal_of,
        "reserved_after": {t: sorted(s & keyword_terminals) for t, s in after.items()},
        "reserved_at_start": sorted(set(start) & keyword_terminals),
    }


class Tokens:
    """The tokens of a text as parallel lists: kind, text, offset, line and column (1-based), the
    last one `END` (right after a `BAD` one, if any). Every token the parser reads lies on one
    line."""

    __slots__ = ("columns", "kinds", "lines", "offsets", "texts")

    def __init__(self, text: str) -> None:
        g = grammar()
        kind_at, keywords = g.kinds, g.keywords
        found = list(g.scanner.finditer(text))
        groups = list(map(_LAST_GROUP, found))  # every token's group is named: never None
        texts = list(map(re.Match.group, found, groups))
        offsets = list(map(re.Match.start, found, groups))
        # a mark's kind is its text, and so is a keyword's (whether it is one is the parser's call)
        kinds = [
            t if (k := kind_at[i]) == _MARK or (k == NAME and t in keywords) else k
            for i, t in zip(groups, texts, strict=True)
        ]
        if BAD in kinds:
            del kinds[kinds.index(BAD) + 1 :]
            del texts[len(kinds) :], offsets[len(kinds) :]
            kinds.append(END)
            texts.append("")
            offsets.append(len(text))
        if len(kinds) > 1 and kinds[-2] == END:  # spaces or comments at the end: matched twice
            del kinds[-1], texts[-1], offsets[-1]
        line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        lines = [bisect.bisect_right(line_starts, o) for o in offsets]
        self.columns = [o - line_starts[n - 1] + 1 for o, n in zip(offsets, lines, strict=True)]
        self.kinds, self.texts, self.offsets, self.lines = kinds, texts, offsets, lines


_NEWLINE = re.compile("\n")
_LAST_GROUP = operator.attrgetter("lastindex")


def reserved(tokens: Tokens, names: list[int]) -> bool:
    """Whether lark's lexer would read one of the words at `names` (tokens spelled like keywords
    that the fast parser read as names) as its keyword. Judged first by the token before each
    (`reserved_after`, cheap and over-approximate), then, for a file that judgement doubts, exactly:
    lark's parse table run over the tokens, no tree built, asked at each such word whether the
    state the lexer would be in accepts the keyword."""
    g = grammar()
    taken = set(names)
    doubted = False
    for i in names:
        word = g.terminal_of[tokens.texts[i]]
        if i == 0:
            doubted = doubted or word in g.reserved_at_start
            continue
        kind = tokens.kinds[i - 1]
        before = NAME if (i - 1) in taken else g.terminal_of.get(kind, kind)
        doubted = doubted or word in g.reserved_after.get(before, ())
    return doubted and _reserved_exactly(tokens, taken)


def _reserved_exactly(tokens: Tokens, names: set[int]) -> bool:
    table = lark_parser().parser.parser._parse_table
    states = table.states
    terminal_of = grammar().terminal_of
    stack = [table.start_states["start"]]
    for i, kind in enumerate(tokens.kinds):
        if kind == END:
            return False
        if i in names:
            if terminal_of[tokens.texts[i]] in states[stack[-1]]:
                return True  # the lexer, in this state, reads the word as the keyword
            terminal = NAME
        else:
            terminal = terminal_of.get(kind, kind)
        while True:
            found = states[stack[-1]].get(terminal)
            if found is None:
                return True  # not what the fast parser read: lark must decide
            action, target = found
            if action.name == "Shift":
                stack.append(target)
                break
            size = len(target.expansion)  # a reduction: pop the rule, go to its left-hand side
            if size:
                del stack[-size:]
            stack.append(states[stack[-1]][target.origin.name][1])
    return False
