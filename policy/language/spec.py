"""What the schema is made of: ``Spec``, one statement's value forms, block and combining rules.

The tables of specs are ``policy.language.schema`` (and, for each loop kind,
its module in ``policy.language.loops``); the checker reads a file against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spec:
    """One statement: its value forms, its block, and how it combines with its siblings."""

    name: str
    forms: tuple[str, ...] = ("",)
    """Accepted value forms (``policy.language.value_forms``); ``""`` is a bare flag."""
    block: Mapping[str, Spec] | None = None
    """The settings its ``{ … }`` block may hold; None: it takes no block."""
    block_required: bool = False
    slot: str | None = None
    """Settings sharing a slot are alternatives (a tool's role): at most one, and an overlay's replaces."""
    keyed: bool = False
    """Repeatable, once per first value (``tool bash { … }`` inside ``loop frequency``)."""
    required: bool = False
    choice_code: str = "E107"
    """The code for a word outside the form's choices."""
    variants: Mapping[str, Mapping[str, Spec]] = field(default_factory=dict)
    """For ``loop``: the block's settings depend on the declaration's name."""
    steps: bool = False
    """The block holds ordered test steps, checked by the test compiler, not settings."""

    @property
    def slot_key(self) -> str:
        return self.slot or self.name


def block(*specs: Spec) -> dict[str, Spec]:
    """Specs by name, for a block's settings."""
    return {s.name: s for s in specs}
