"""Write gates, error signatures and normalizers."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from policy.language import ast
from policy.language.checker import Declaration
from policy.language.collector import did_you_mean, join_help, quoted_list
from policy.language.compiler.context import Context
from policy.language.patterns import check_glob, check_replacement, compile_regex, replacement_template
from policy.language.schema import GATE, SIGNATURE
from policy.language.setting_values import first_value, names, word
from policy.model.compiled import WRITING_ROLES, GateRule, Normalizer, SignatureRule, ToolSpec, Validator
from policy.model.decision import RuleRef

DEFAULT_TIMEOUT = 10.0


def compile_gates(ctx: Context, tools: Mapping[str, ToolSpec]) -> tuple[GateRule, ...]:
    writers = any(tool.role in WRITING_ROLES for tool in tools.values())
    gates = []
    for declaration in ctx.declarations("gate"):
        complete = ctx.require(declaration, GATE)
        globs = _globs(ctx, declaration)
        validator = _validator(ctx, declaration)
        partial = word(declaration.settings, "partial", "block") == "allow"
        hint = ctx.use_hint(declaration.settings.get("hint"), "gate")
        if not writers:
            ctx.report.add(
                "W102",
                f"gate `{declaration.name}` can never run: no tool writes or edits files",
                declaration.head_span,
                "map a tool to a writing role, e.g. `tool write_file { writes path=path content=content }`",
            )
        if complete and globs is not None and validator is not None:
            ref = RuleRef("gate", declaration.name, declaration.header.span)
            gates.append(GateRule(ref=ref, globs=globs, validator=validator, partial=partial, hint=hint))
    return tuple(gates)


def _globs(ctx: Context, declaration: Declaration) -> tuple[str, ...] | None:
    setting = declaration.settings.get("files")
    if setting is None:
        return None
    values = [v for v in setting.statement.values if isinstance(v, ast.String)]
    valid = [check_glob(v, ctx.report) for v in values]
    return tuple(v.value for v in values) if all(valid) else None


def _validator(ctx: Context, declaration: Declaration) -> Validator | None:
    setting = declaration.settings.get("check")
    if setting is None:
        return None
    kind_value, *rest = setting.statement.values
    assert isinstance(kind_value, ast.Name)
    confirm = declaration.settings.get("confirm")
    if kind_value.value != "command":
        if confirm is None:
            return Validator(kind=kind_value.value)
        checker = _command(ctx, declaration, confirm.statement.values[1])
        return None if checker is None else Validator(kind=kind_value.value, confirm=checker)
    if confirm is not None:
        ctx.report.add("E107", "`confirm` names the language's own checker for a built-in `check`; this "
                       "gate's check already is a command", confirm.statement.span, "remove `confirm`")
        return None
    return _command(ctx, declaration, rest[0])


def _command(ctx: Context, declaration: Declaration, command: ast.Value) -> Validator | None:
    """A command checker (``check command "…"``, ``confirm command "…"``) with the gate's timeout."""
    assert isinstance(command, ast.String)
    timeout = _timeout(ctx, declaration)
    problem = _command_problem(command.value)
    if problem:
        ctx.report.add(
            "E107",
            problem,
            command.span,
            'the file to check goes where `{file}` stands (or last), e.g. "bash -n {file}"',
        )
        return None
    if timeout is None:
        return None
    return Validator(kind="command", command=command.value, timeout=timeout)


def _command_problem(command: str) -> str | None:
    """Why a checker command cannot run as written (it is split like a shell would, never run by one)."""
    try:
        words = shlex.split(command)
    except ValueError as err:
        return f"the checker command cannot be split into words: {err}"
    return None if words else "the checker command is empty"


def _timeout(ctx: Context, declaration: Declaration) -> float | None:
    value = first_value(declaration.settings, "timeout")
    if not isinstance(value, ast.Number):
        return DEFAULT_TIMEOUT
    if value.value <= 0:
        ctx.report.add(
            "E402",
            f"timeout must be positive, not {value.text}",
            value.span,
            "seconds the checker may run, e.g. `timeout 5`",
        )
        return None
    return float(value.value)


def compile_signatures(ctx: Context) -> tuple[SignatureRule, ...]:
    signatures = []
    for declaration in ctx.declarations("signature"):
        settings = declaration.settings
        complete = ctx.require(declaration, SIGNATURE)
        match = first_value(settings, "match")
        pattern = compile_regex(match, ctx.report) if isinstance(match, ast.Regex) else None
        groups = pattern.groups if pattern else ()
        explicit_key = names(settings, "key")
        key_ok = pattern is None or _check_key(ctx, declaration, groups)
        hint = ctx.use_hint(settings.get("hint"), "signature", frozenset(groups))
        if hint is not None and match is not None and "captures" not in hint.variables:
            for group in groups:
                if group not in hint.variables and group not in (explicit_key or ()):
                    ctx.report.add(
                        "W101",
                        f"named group `{group}` of signature `{declaration.name}` is not used by its hint",
                        match.span,
                        f"use {{{{ {group} }}}} in hint `{hint.name}`, or make the group "
                        "non-capturing: (?:…)",
                    )
        if complete and pattern is not None and key_ok:
            tools = names(settings, "tools")
            signatures.append(
                SignatureRule(
                    ref=RuleRef("signature", declaration.name, declaration.header.span),
                    pattern=pattern,
                    on_error_only=word(settings, "on", "error") == "error",
                    tools=frozenset(tools) if tools is not None else None,
                    key=explicit_key if explicit_key is not None else groups,
                    hint=hint,
                )
            )
    return tuple(signatures)


def _check_key(ctx: Context, declaration: Declaration, groups: tuple[str, ...]) -> bool:
    setting = declaration.settings.get("key")
    if setting is None:
        return True
    ok = True
    for value in setting.statement.values:
        if isinstance(value, (ast.Name, ast.String)) and value.value not in groups:
            ok = False
            listing = f"named groups: {quoted_list(groups)}" if groups else "the pattern has no named group"
            ctx.report.add(
                "E107",
                f"`key` names `{value.value}`, which is not a named group of the pattern",
                value.span,
                join_help(did_you_mean(value.value, groups), listing),
            )
    return ok


def compile_normalizers(ctx: Context) -> tuple[Normalizer, ...]:
    normalizers = []
    for statement in ctx.composition.normalizers:
        regex, replacement = statement.values
        assert isinstance(regex, ast.Regex) and isinstance(replacement, ast.String)
        pattern = compile_regex(regex, ctx.report)
        if pattern is not None and check_replacement(pattern, replacement, ctx.report):
            template = replacement_template(pattern, replacement.value)
            normalizers.append(Normalizer(pattern=pattern, replacement=replacement.value, template=template))
    return tuple(normalizers)
