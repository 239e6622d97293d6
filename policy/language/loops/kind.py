"""The one interface every loop kind implements on the language side.

A kind (``loop repeat``) is one module of ``policy.language.loops`` holding a
``LoopKind``: the settings its block takes (read by the schema and the
checker), the hint variables its rule adds to the common ones (read by the
hint check and documented in ``docs/hints.md``), and ``compile``, which turns
a checked declaration into its rule (a ``policy.model.compiled.LoopRule``),
reporting what is wrong with the values on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from policy.language.spec import Spec
from policy.model.compiled import LoopRule
from policy.model.decision import RuleRef
from policy.model.hint_template import HintTemplate

if TYPE_CHECKING:
    from policy.language.checker import Declaration
    from policy.language.compiler.context import Context

Compile = Callable[["Context", "Declaration", RuleRef, HintTemplate | None, bool], LoopRule | None]
"""``(ctx, declaration, ref, hint, complete)`` → the rule, or None when its values are wrong
(reported).  ``complete``: no required setting is missing (a missing one is reported already)."""


@dataclass(frozen=True)
class LoopKind:
    """One kind of loop rule: its name, its block's settings, its hint variables, its compiler."""

    name: str
    settings: Mapping[str, Spec]
    variables: frozenset[str]
    """The hint variables its rule provides beyond the common ones."""
    compile: Compile
