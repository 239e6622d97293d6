"""The threshold settings loop kinds share (``warn``, ``stop``, ``window``) and their checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from policy.language.setting_values import int_value
from policy.language.spec import Spec
from policy.model.diagnostics import Span

if TYPE_CHECKING:
    from policy.language.checker import Setting
    from policy.language.compiler.context import Context


def thresholds() -> tuple[Spec, Spec]:
    """The required ``warn N`` and ``stop M`` settings."""
    return Spec("warn", ("INT",), required=True), Spec("stop", ("INT",), required=True)


def limits(ctx: Context, settings: Mapping[str, Setting]) -> tuple[int, int] | None:
    """``warn`` and ``stop``: each at least 1, warn below stop (E402, E401)."""
    warn, stop = int_value(settings, "warn"), int_value(settings, "stop")
    if warn is None or stop is None:
        return None
    ok = all([at_least(ctx, "warn", warn, 1), at_least(ctx, "stop", stop, 1)])
    if ok and warn[0] >= stop[0]:
        ctx.report.add(
            "E401",
            f"`warn {warn[0]}` is not below `stop {stop[0]}`",
            warn[1],
            "the warning must come before the stop, e.g. `warn 3` and `stop 5`",
        )
        return None
    return (warn[0], stop[0]) if ok else None


def at_least(ctx: Context, name: str, value: tuple[int, Span], minimum: int) -> bool:
    """True when the value is at least ``minimum``; else reported (E402)."""
    if value[0] >= minimum:
        return True
    ctx.report.add("E402", f"`{name}` must be at least {minimum}, not {value[0]}", value[1])
    return False


def window(
    ctx: Context, settings: Mapping[str, Setting], warn: int, stop: int, must_reach_stop: bool
) -> int | None:
    """The ``window`` (0 when absent), or None when it is out of range (reported)."""
    found = int_value(settings, "window")
    if found is None:
        return 0
    size, span = found
    if not at_least(ctx, "window", found, 1):
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
