"""``loop oscillation { period A..B; repeats N; no_progress; warn|stop; hint NAME }`` → an
``OscillationRule``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy.language import ast
from policy.language.loops.kind import LoopKind
from policy.language.loops.limits import at_least
from policy.language.setting_values import first_value, int_value
from policy.language.spec import Spec, block
from policy.model.compiled import OscillationRule
from policy.model.decision import RuleRef
from policy.model.hint_template import HintTemplate

if TYPE_CHECKING:
    from policy.language.checker import Declaration
    from policy.language.compiler.context import Context


def _compile(
    ctx: Context, declaration: Declaration, ref: RuleRef, hint: HintTemplate | None, complete: bool
) -> OscillationRule | None:
    if not complete:
        return None
    settings = declaration.settings
    period = first_value(settings, "period")
    repeats = int_value(settings, "repeats")
    assert isinstance(period, ast.Range) and repeats is not None
    ok = True
    if period.low < 2:
        ctx.report.add(
            "E402",
            f"a period starts at 2 calls or more, not {period.low}",
            period.span,
            "a cycle of one call is a repeat: use `loop repeat` for that",
        )
        ok = False
    elif period.low > period.high:
        ctx.report.add(
            "E402",
            f"period {period.low}..{period.high} is empty: {period.low} is above {period.high}",
            period.span,
            f"write {period.high}..{period.low}",
        )
        ok = False
    if not at_least(ctx, "repeats", repeats, 2):
        ok = False
    if not ok:
        return None
    action = settings.get("action")
    return OscillationRule(
        ref,
        min_period=period.low,
        max_period=period.high,
        repeats=repeats[0],
        no_progress="no_progress" in settings,
        action="stop" if action is not None and action.statement.name == "stop" else "warn",
        hint=hint,
    )


KIND = LoopKind(
    name="oscillation",
    settings=block(
        Spec("period", ("RANGE",), required=True),
        Spec("repeats", ("INT",), required=True),
        Spec("no_progress"),
        Spec("warn", slot="action"),
        Spec("stop", slot="action"),
        Spec("hint", ("NAME",)),
    ),
    variables=frozenset({"count", "period", "repeats", "cycle"}),
    compile=_compile,
)
