"""``tool NAME { writes path=… ; key …; ignore …; mutates_when /…/; fails_when /…/ }`` → ToolSpec."""

from __future__ import annotations

from types import MappingProxyType

from policy.language import ast
from policy.language.checker import Setting
from policy.language.collector import did_you_mean, join_help, quoted_list
from policy.language.compiler.context import Context
from policy.language.patterns import compile_regex
from policy.language.setting_values import first_value, names
from policy.model.compiled import ROLE_FIELDS, ROLE_STATEMENTS, Pattern, ToolRole, ToolSpec

OPTIONAL_FIELDS = frozenset({"append", "all", "start", "end", "limit", "cell", "type", "mode"})
"""Role fields a mapping may leave out; every other field of its role is required."""

ALL_ARGS = "*"
"""``key *``: every argument forms the call key."""


def compile_tools(
    ctx: Context, default_key: tuple[str, ...] | None, default_ignore: frozenset[str]
) -> dict[str, ToolSpec]:
    """Every ``tool`` declaration, by name.  A tool without ``key``/``ignore`` takes the policy's."""
    tools: dict[str, ToolSpec] = {}
    for declaration in ctx.declarations("tool"):
        settings = declaration.settings
        role: ToolRole = "other"
        args: dict[str, str] = {}
        role_setting = settings.get("role")
        if role_setting is not None:
            role = ROLE_STATEMENTS[role_setting.statement.name]
            args = _role_args(ctx, role_setting, role)
        ignore = names(settings, "ignore")
        tools[declaration.name] = ToolSpec(
            name=declaration.name,
            role=role,
            args=MappingProxyType(args),
            key_args=key_args(ctx, settings.get("key"), default_key),
            ignore_args=default_ignore if ignore is None else frozenset(ignore),
            mutates_when=_pattern(ctx, first_value(settings, "mutates_when")),
            fails_when=_pattern(ctx, first_value(settings, "fails_when")),
            span=declaration.header.span,
        )
    return tools


def key_args(
    ctx: Context, setting: Setting | None, default: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    """The arguments that form a call key; None means all of them (``key *``)."""
    if setting is None:
        return default
    values = setting.statement.values
    words = tuple(v.value for v in values if isinstance(v, (ast.Name, ast.String)))
    if ALL_ARGS not in words:
        return words
    if len(words) > 1:
        ctx.report.add(
            "E107",
            "`key *` stands alone: every argument is part of the key",
            values[0].span,
            "write `key *` or list the argument names",
        )
    return None


def _pattern(ctx: Context, value: ast.Value | None) -> Pattern | None:
    return compile_regex(value, ctx.report) if isinstance(value, ast.Regex) else None


def _role_args(ctx: Context, setting: Setting, role: ToolRole) -> dict[str, str]:
    """``path=path content=content`` → {role field: argument name}, checking fields against the role."""
    statement = setting.statement
    fields = ROLE_FIELDS[role]
    args: dict[str, str] = {}
    for pair in statement.values:
        assert isinstance(pair, ast.Pair)
        if pair.key not in fields:
            ctx.report.add(
                "E502",
                f"`{statement.name}` has no field `{pair.key}`",
                pair.span,
                join_help(did_you_mean(pair.key, fields), f"fields: {quoted_list(fields)}"),
            )
            continue
        if pair.key in args:
            ctx.report.add("E106", f"field `{pair.key}` given twice", pair.span, "give each field once")
            continue
        if not isinstance(pair.value, (ast.Name, ast.String)):
            ctx.report.add(
                "E103",
                f"`{pair.key}=` names an argument, not a number",
                pair.value.span,
                f"expected: {pair.key}=ARGUMENT_NAME",
            )
            continue
        args[pair.key] = pair.value.value
    missing = [f for f in fields if f not in OPTIONAL_FIELDS and f not in args]
    if missing:
        shape = " ".join(f"{f}=ARG" if f not in OPTIONAL_FIELDS else f"[{f}=ARG]" for f in fields)
        ctx.report.add(
            "E104",
            f"`{statement.name}` needs {quoted_list(f'{f}=' for f in missing)}",
            statement.name_span,
            f"expected: {statement.name} {shape}",
        )
    return args
