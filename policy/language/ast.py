"""Syntax tree of a .policy file: statements with typed values, every node located.

The grammar is deliberately uniform (name, values, optional block); the
checker gives statements their meaning (see ``policy.language.schema``).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, ClassVar

from policy.model.diagnostics import Span


class SourceLines:
    """One file's path and text, turning character offsets into spans when a span is asked for.

    Nodes keep offsets, not spans: a large policy has a million nodes, almost none of whose spans
    is ever shown, and a span per node would be as many more objects to build and for the garbage
    collector to visit.
    """

    __slots__ = ("_starts", "path", "text")

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self._starts: list[int] | None = None

    def span(self, start: int, end: int) -> Span:
        """The span of ``text[start:end]`` (lines split at LF, as the parser counts them)."""
        starts = self._starts
        if starts is None:
            starts = self._starts = _line_starts(self.text)
        line = bisect_right(starts, start)
        end_line = bisect_right(starts, end, line - 1)
        return Span(self.path, line, start - starts[line - 1] + 1, end_line, end - starts[end_line - 1] + 1,
                    start, end)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SourceLines):
            return NotImplemented
        return self is other or (self.path == other.path and self.text == other.text)

    def __hash__(self) -> int:
        return hash((self.path, len(self.text)))

    def __repr__(self) -> str:
        return f"SourceLines({self.path!r})"


def _line_starts(text: str) -> list[int]:
    starts = [0]
    position = text.find("\n")
    while position >= 0:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    return starts


@dataclass(frozen=True, slots=True)
class Node:
    """Nodes are plain immutable records: the parser builds them from text the grammar already
    shaped, so there is nothing to validate.  A node is ``lines.text[start:end]``.  The parser
    passes the fields by position, in the order declared here (a million nodes; keywords cost a
    third more per node)."""

    lines: SourceLines = field(repr=False)
    start: int
    end: int

    @property
    def span(self) -> Span:
        return self.lines.span(self.start, self.end)


@dataclass(frozen=True, slots=True)
class Name(Node):
    kind: ClassVar[str] = "name"
    value: str


@dataclass(frozen=True, slots=True)
class String(Node):
    kind: ClassVar[str] = "string"
    value: str
    triple: bool = False
    """Written as a triple-quoted string."""


@dataclass(frozen=True, slots=True)
class Regex(Node):
    kind: ClassVar[str] = "regex"
    pattern: str
    flags: str = ""


@dataclass(frozen=True, slots=True)
class Number(Node):
    kind: ClassVar[str] = "number"
    value: int | float
    text: str


@dataclass(frozen=True, slots=True)
class Size(Node):
    kind: ClassVar[str] = "size"
    value: int
    """In bytes."""
    text: str


@dataclass(frozen=True, slots=True)
class Range(Node):
    kind: ClassVar[str] = "range"
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Pair(Node):
    kind: ClassVar[str] = "pair"
    key: str
    value: Name | String | Number


@dataclass(frozen=True, slots=True)
class Json(Node):
    """A JSON literal (object or array) with its decoded value."""

    kind: ClassVar[str] = "json"
    value: Any


Value = Name | String | Regex | Number | Size | Range | Pair | Json


@dataclass(frozen=True, slots=True)
class Block(Node):
    statements: list[Statement]


@dataclass(frozen=True, slots=True)
class Statement(Node):
    """``name value… { block }``: a declaration at top level, a setting inside a block."""

    name: str
    values: list[Value]
    block: Block | None = None

    @property
    def name_span(self) -> Span:
        """The statement's name: it starts every statement."""
        return self.lines.span(self.start, self.start + len(self.name))


@dataclass(frozen=True, slots=True)
class PolicyFile(Node):
    """One parsed file.  ``source`` is kept for diagnostics with carets."""

    path: str
    source: str
    statements: list[Statement]

