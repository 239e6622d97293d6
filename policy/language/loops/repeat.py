"""``loop repeat { window N; warn N; stop N; until_progress; hint NAME }`` → a ``RepeatRule``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy.language.loops.kind import LoopKind
from policy.language.loops.limits import limits, thresholds, window
from policy.language.spec import Spec, block
from policy.model.compiled import RepeatRule
from policy.model.decision import RuleRef
from policy.model.hint_template import HintTemplate

if TYPE_CHECKING:
    from policy.language.checker import Declaration
    from policy.language.compiler.context import Context

DEFAULT_WINDOW = 20
"""DeerFlow's window of recent calls for ``loop repeat``."""


def _compile(
    ctx: Context, declaration: Declaration, ref: RuleRef, hint: HintTemplate | None, complete: bool
) -> RepeatRule | None:
    settings = declaration.settings
    found = limits(ctx, settings)
    if not complete or found is None:
        return None
    warn, stop = found
    size = window(ctx, settings, warn, stop, must_reach_stop=True)
    if size is None:
        return None
    return RepeatRule(ref, window=size or DEFAULT_WINDOW, warn=warn, stop=stop,
                      until_progress="until_progress" in settings, hint=hint)


KIND = LoopKind(
    name="repeat",
    settings=block(Spec("window", ("INT",)), *thresholds(), Spec("until_progress"), Spec("hint", ("NAME",))),
    variables=frozenset({"count", "warn", "stop", "window", "same_result", "result_excerpt"}),
    compile=_compile,
)
