"""``loop NAME { … }`` → loop rules, each built by its kind (``policy.language.loops``)."""

from __future__ import annotations

from policy.language.compiler.context import Context
from policy.language.loops import LOOP_KINDS
from policy.model.compiled import LoopRule
from policy.model.decision import RuleRef


def compile_loops(ctx: Context) -> tuple[LoopRule, ...]:
    """The loop rules, in declaration order; a declaration with errors is left out."""
    rules: list[LoopRule] = []
    for declaration in ctx.declarations("loop"):
        kind = LOOP_KINDS[declaration.name]
        complete = ctx.require(declaration, kind.settings)
        ref = RuleRef("loop", declaration.name, declaration.header.span)
        hint = ctx.use_hint(declaration.settings.get("hint"), declaration.name)
        rule = kind.compile(ctx, declaration, ref, hint, complete)
        if rule is not None:
            rules.append(rule)
    return tuple(rules)
