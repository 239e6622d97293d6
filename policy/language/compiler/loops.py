"""``loop repeat|frequency|error_streak|oscillation { … }`` → loop rules, with threshold checks."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from policy.language import ast
from policy.language.checker import Declaration, Setting
from policy.language.compiler.context import Context, first_value, int_value, word
from policy.language.schema import LOOPS
from policy.model.compiled import ErrorStreakRule, FrequencyRule, OscillationRule, RepeatRule, ToolLimit
from policy.model.decision import RuleRef
from policy.model.diagnostics import Span
from policy.model.hint_template import HintTemplate

DEFAULT_REPEAT_WINDOW = 20
"""DeerFlow's window of recent calls for ``loop repeat``."""


def compile_loops(ctx: Context) -> dict[str, Any]:
    """The loop rules, by layer name (the ``CompiledPolicy`` field each goes into); a layer
    whose declaration has errors is left out."""
    rules: dict[str, Any] = {}
    for declaration in ctx.declarations("loop"):
        complete = ctx.require(declaration, LOOPS[declaration.name])
        ref = RuleRef("loop", declaration.name, declaration.header.span)
        settings = declaration.settings
        hint = ctx.use_hint(settings.get("hint"), declaration.name)
        if declaration.name == "oscillation":
            rules["oscillation"] = _oscillation(ctx, declaration, ref, hint) if complete else None
            continue
        limits = _limits(ctx, settings)
        overrides = _overrides(ctx, declaration) if declaration.name == "frequency" else {}
        if not complete or limits is None:
            continue
        warn, stop = limits
        if declaration.name == "repeat":
            window = _window(ctx, settings, warn, stop, must_reach_stop=True)
            if window is not None:
                rules["repeat"] = RepeatRule(
                    ref=ref,
                    window=window or DEFAULT_REPEAT_WINDOW,
                    warn=warn,
                    stop=stop,
                    until_progress="until_progress" in settings,
                    hint=hint,
                )
        elif declaration.name == "frequency":
            window = _window(ctx, settings, warn, stop, must_reach_stop=False)
            if window is not None and overrides is not None:
                rules["frequency"] = FrequencyRule(
                    ref=ref,
                    window=FrequencyRule.window_for(window, stop, overrides),
                    warn=warn,
                    stop=stop,
                    overrides=MappingProxyType(overrides),
                    hint=hint,
                )
        else:
            rules["error_streak"] = ErrorStreakRule(
                ref=ref,
                warn=warn,
                stop=stop,
                same_captures=word(settings, "same", "captures") == "captures",
                hint=hint,
            )
    return rules


def _limits(ctx: Context, settings: Mapping[str, Setting]) -> tuple[int, int] | None:
    """``warn`` and ``stop``: each at least 1, warn below stop (E402, E401)."""
    warn, stop = int_value(settings, "warn"), int_value(settings, "stop")
    if warn is None or stop is None:
        return None
    ok = all([_at_least(ctx, "warn", warn, 1), _at_least(ctx, "stop", stop, 1)])
    if ok and warn[0] >= stop[0]:
        ctx.report.add(
            "E401",
            f"`warn {warn[0]}` is not below `stop {stop[0]}`",
            warn[1],
            "the warning must come before the stop, e.g. `warn 3` and `stop 5`",
        )
        return None
    return (warn[0], stop[0]) if ok else None


def _at_least(ctx: Context, name: str, value: tuple[int, Span], minimum: int) -> bool:
    if value[0] >= minimum:
        return True
    ctx.report.add("E402", f"`{name}` must be at least {minimum}, not {value[0]}", value[1])
    return False


def _window(
    ctx: Context, settings: Mapping[str, Setting], warn: int, stop: int, must_reach_stop: bool
) -> int | None:
    """The ``window`` (0 when absent), or None when it is out of range (reported)."""
    window = int_value(settings, "window")
    if window is None:
        return 0
    size, span = window
    if not _at_least(ctx, "window", window, 1):
        return None
    if size < warn:
        ctx.report.add(
            "E402",
            f"`window {size}` is shorter than `warn {warn}`: the warning could never fire",
            span,
            f"make the window at least {warn}",
        )
        return None
    if must_reach_stop and size < stop:
        ctx.report.add(
            "E402",
            f"`window {size}` is shorter than `stop {stop}`: the stop could never happen",
            span,
            f"make the window at least {stop}",
        )
        return None
    return size


def _overrides(ctx: Context, declaration: Declaration) -> dict[str, ToolLimit] | None:
    """``tool NAME { warn N; stop M }`` limits of ``loop frequency``, by tool name."""
    overrides: dict[str, ToolLimit] = {}
    ok = True
    block_specs = LOOPS["frequency"]["tool"].block or {}
    for key, setting in declaration.settings.items():
        if not key.startswith("tool "):
            continue
        tool_value = setting.statement.values[0]
        assert isinstance(tool_value, (ast.Name, ast.String))
        label = f"`tool {tool_value.value}`"
        if not ctx.require_settings(
            setting.settings, frozenset(), block_specs, setting.statement.name_span, label
        ):
            ok = False
            continue
        limits = _limits(ctx, setting.settings)
        if limits is None:
            ok = False
            continue
        overrides[tool_value.value] = ToolLimit(*limits)
    return overrides if ok else None


def _oscillation(
    ctx: Context, declaration: Declaration, ref: RuleRef, hint: HintTemplate | None
) -> OscillationRule | None:
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
    if not _at_least(ctx, "repeats", repeats, 2):
        ok = False
    if not ok:
        return None
    action = settings.get("action")
    return OscillationRule(
        ref=ref,
        min_period=period.low,
        max_period=period.high,
        repeats=repeats[0],
        no_progress="no_progress" in settings,
        action="stop" if action is not None and action.statement.name == "stop" else "warn",
        hint=hint,
    )
