"""Syntax tree of a .policy file: statements with typed values, every node located.

The grammar is deliberately uniform (name, values, optional block); the
checker gives statements their meaning (see ``policy.language.schema``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from policy.model.diagnostics import Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """Nodes are plain immutable records: the parser builds them from text the grammar already
    shaped, so there is nothing to validate."""

    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class Name(Node):
    kind: ClassVar[str] = "name"
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class String(Node):
    kind: ClassVar[str] = "string"
    value: str
    triple: bool = False
    """Written as a triple-quoted string."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Regex(Node):
    kind: ClassVar[str] = "regex"
    pattern: str
    flags: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Number(Node):
    kind: ClassVar[str] = "number"
    value: int | float
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Size(Node):
    kind: ClassVar[str] = "size"
    value: int
    """In bytes."""
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Range(Node):
    kind: ClassVar[str] = "range"
    low: int
    high: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Pair(Node):
    kind: ClassVar[str] = "pair"
    key: str
    value: Name | String | Number


@dataclass(frozen=True, slots=True, kw_only=True)
class Json(Node):
    """A JSON literal (object or array) with its decoded value."""

    kind: ClassVar[str] = "json"
    value: Any


Value = Name | String | Regex | Number | Size | Range | Pair | Json


@dataclass(frozen=True, slots=True, kw_only=True)
class Block(Node):
    statements: list[Statement]


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement(Node):
    """``name value… { block }``: a declaration at top level, a setting inside a block."""

    name: str
    name_span: Span
    values: list[Value]
    block: Block | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyFile(Node):
    """One parsed file.  ``source`` is kept for diagnostics with carets."""

    path: str
    source: str
    statements: list[Statement]

