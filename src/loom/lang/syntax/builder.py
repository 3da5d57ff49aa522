"""What both parsers (`reduce.py` over lark, `descent.py` by hand) hand the tree builder
(`tree_to_ast.Build`): a rule's positions, and tokens. Free of lark, so that a text the fast parser
reads never loads it."""

from __future__ import annotations

# Where a rule's text starts (line, column, offset) and ends (end line, end column, end offset);
# None when it matched no text (an empty parameter list).
Start = tuple[int, int, int] | None
End = tuple[int, int, int] | None
Positions = tuple[Start, End]


class Builder:
    """What `reduce.parse` needs of a tree builder: `here`, the positions of the rule being
    reduced, which `reduce._Positions` sets just before the builder's method for that rule runs."""

    here: Positions = (None, None)


class Token(str):
    """A token as the fast parser hands it over: its text, with the attributes of lark's `Token`
    that the tree builder reads. The builder tells a token from a plain text (`"id"`, a type's
    mark) by its class: anything but a plain `str` is a token."""

    __slots__ = ("column", "end_column", "end_line", "end_pos", "line", "start_pos", "type")

    type: str
    start_pos: int
    line: int
    column: int
    end_line: int
    end_column: int
    end_pos: int
