"""``loop frequency { window N; warn N; stop N; tool NAME { warn N; stop N }…; hint NAME }`` →
a ``FrequencyRule``."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from policy.language import ast
from policy.language.loops.kind import LoopKind
from policy.language.loops.limits import limits, thresholds, window
from policy.language.spec import Spec, block
from policy.model.compiled import FrequencyRule, ToolLimit
from policy.model.decision import RuleRef
from policy.model.hint_template import HintTemplate

if TYPE_CHECKING:
    from policy.language.checker import Declaration
    from policy.language.compiler.context import Context

TOOL_SETTINGS = block(*thresholds())
"""The settings of a ``tool NAME { … }`` block: its own ``warn`` and ``stop``."""


def _compile(
    ctx: Context, declaration: Declaration, ref: RuleRef, hint: HintTemplate | None, complete: bool
) -> FrequencyRule | None:
    settings = declaration.settings
    found = limits(ctx, settings)
    overrides = _overrides(ctx, declaration)
    if not complete or found is None:
        return None
    warn, stop = found
    size = window(ctx, settings, warn, stop, must_reach_stop=False)
    if size is None or overrides is None:
        return None
    return FrequencyRule(ref, window=FrequencyRule.window_for(size, stop, overrides), warn=warn, stop=stop,
                         overrides=MappingProxyType(overrides), hint=hint)


def _overrides(ctx: Context, declaration: Declaration) -> dict[str, ToolLimit] | None:
    """``tool NAME { warn N; stop M }`` limits, by tool name."""
    overrides: dict[str, ToolLimit] = {}
    ok = True
    for key, setting in declaration.settings.items():
        if not key.startswith("tool "):
            continue
        tool_value = setting.statement.values[0]
        assert isinstance(tool_value, (ast.Name, ast.String))
        label = f"`tool {tool_value.value}`"
        if not ctx.require_settings(
            setting.settings, frozenset(), TOOL_SETTINGS, setting.statement.name_span, label
        ):
            ok = False
            continue
        tool_limits = limits(ctx, setting.settings)
        if tool_limits is None:
            ok = False
            continue
        overrides[tool_value.value] = ToolLimit(*tool_limits)
    return overrides if ok else None


KIND = LoopKind(
    name="frequency",
    settings=block(
        Spec("window", ("INT",)),
        *thresholds(),
        Spec("tool", ("ARG",), block=TOOL_SETTINGS, block_required=True, keyed=True),
        Spec("hint", ("NAME",)),
    ),
    variables=frozenset({"count", "warn", "stop", "window"}),
    compile=_compile,
)
