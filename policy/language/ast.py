"""Syntax tree of a .policy file: statements with typed values, every node located.

The grammar is deliberately uniform (name, values, optional block); the
checker gives statements their meaning (see ``policy.language.schema``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from policy.model.diagnostics import Span


class Node(BaseModel):
    model_config = ConfigDict(frozen=True)

    span: Span


class Name(Node):
    kind: Literal["name"] = "name"
    value: str


class String(Node):
    kind: Literal["string"] = "string"
    value: str
    triple: bool = False
    """Written as a triple-quoted string."""


class Regex(Node):
    kind: Literal["regex"] = "regex"
    pattern: str
    flags: str = ""


class Number(Node):
    kind: Literal["number"] = "number"
    value: int | float
    text: str


class Size(Node):
    kind: Literal["size"] = "size"
    value: int
    """In bytes."""
    text: str


class Range(Node):
    kind: Literal["range"] = "range"
    low: int
    high: int


class Pair(Node):
    kind: Literal["pair"] = "pair"
    key: str
    value: Name | String | Number


class Json(Node):
    """A JSON literal (object or array) with its decoded value."""

    kind: Literal["json"] = "json"
    value: Any


Value = Annotated[
    Name | String | Regex | Number | Size | Range | Pair | Json,
    Field(discriminator="kind"),
]


class Block(Node):
    statements: list[Statement]


class Statement(Node):
    """``name value… { block }``: a declaration at top level, a setting inside a block."""

    name: str
    name_span: Span
    values: list[Value]
    block: Block | None = None


class PolicyFile(Node):
    """One parsed file.  ``source`` is kept for diagnostics with carets."""

    path: str
    source: str
    statements: list[Statement]


Block.model_rebuild()
