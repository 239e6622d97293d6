"""``workspace { sweep on; shell_writes on; progress on; track …; max_files N; hint …; … }``."""

from __future__ import annotations

from policy.language import ast
from policy.language.compiler.context import Context
from policy.language.patterns import check_glob
from policy.language.setting_values import int_value, word
from policy.model.compiled import WorkspaceRule
from policy.model.decision import RuleRef


def compile_workspace(ctx: Context) -> WorkspaceRule | None:
    """The policy's ``workspace`` block, or None when it has none."""
    declaration = next(ctx.declarations("workspace"), None)
    if declaration is None:
        return None
    settings = declaration.settings
    track: tuple[str, ...] = ()
    setting = settings.get("track")
    if setting is not None:
        values = [v for v in setting.statement.values if isinstance(v, ast.String)]
        if all([check_glob(v, ctx.report) for v in values]):
            track = tuple(v.value for v in values)
    max_files = WorkspaceRule.max_files
    found = int_value(settings, "max_files")
    if found is not None:
        if found[0] < 1:
            ctx.report.add("E402", f"`max_files` must be at least 1, not {found[0]}", found[1],
                           "the most files a workspace snapshot covers, e.g. `max_files 20000`")
        else:
            max_files = found[0]
    return WorkspaceRule(
        ref=RuleRef("workspace", "", declaration.header.span),
        sweep=word(settings, "sweep", "off") == "on",
        shell_writes=word(settings, "shell_writes", "off") == "on",
        progress=word(settings, "progress", "off") == "on",
        track=track,
        max_files=max_files,
        hint=ctx.use_hint(settings.get("hint"), "sweep"),
        incomplete_hint=ctx.use_hint(settings.get("incomplete_hint"), "incomplete"),
    )
