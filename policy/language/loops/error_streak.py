"""``loop error_streak { warn N; stop N; same captures|signature; hint NAME }`` → an ``ErrorStreakRule``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy.language.loops.kind import LoopKind
from policy.language.loops.limits import limits, thresholds
from policy.language.setting_values import word
from policy.language.spec import Spec, block
from policy.model.compiled import ErrorStreakRule
from policy.model.decision import RuleRef
from policy.model.hint_template import HintTemplate

if TYPE_CHECKING:
    from policy.language.checker import Declaration
    from policy.language.compiler.context import Context


def _compile(
    ctx: Context, declaration: Declaration, ref: RuleRef, hint: HintTemplate | None, complete: bool
) -> ErrorStreakRule | None:
    settings = declaration.settings
    found = limits(ctx, settings)
    if not complete or found is None:
        return None
    warn, stop = found
    return ErrorStreakRule(ref, warn=warn, stop=stop,
                           same_captures=word(settings, "same", "captures") == "captures", hint=hint)


KIND = LoopKind(
    name="error_streak",
    settings=block(*thresholds(), Spec("same", ("captures|signature",)), Spec("hint", ("NAME",))),
    variables=frozenset({"count", "warn", "stop", "signature", "captures", "excerpt"}),
    compile=_compile,
)
