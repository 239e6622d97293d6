"""Composed declarations → an immutable CompiledPolicy, with every semantic check on the way.

Each step reports into one ``DiagnosticCollector`` and keeps going, so a single run finds
every problem; the policy is only built when no error was found.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from policy.language import ast
from policy.language.checker import Setting
from policy.language.collector import DiagnosticCollector
from policy.language.compiler.context import Context
from policy.language.compiler.hint_templates import compile_hints
from policy.language.compiler.loops import compile_loops
from policy.language.compiler.policy_tests import compile_tests
from policy.language.compiler.rules import compile_gates, compile_normalizers, compile_signatures
from policy.language.compiler.tools import compile_tools, key_args
from policy.language.compiler.workspace import compile_workspace
from policy.language.compose import Composition
from policy.language.setting_values import first_value, int_value, names, word
from policy.model.compiled import CompiledPolicy
from policy.model.diagnostics import has_errors

__all__ = ["compile_policy"]


def compile_policy(composition: Composition, report: DiagnosticCollector) -> CompiledPolicy | None:
    """Check and compile; None when any error was reported (by this step or before it)."""
    ctx = Context(composition, report)
    header = composition.declarations.get(("policy", ""))
    settings: dict[str, Setting] = header.settings if header else {}
    max_scopes = _max_scopes(ctx, settings)
    scan_limit = _byte_limit(ctx, settings, "scan_limit", "64KB")
    max_check_bytes = _byte_limit(ctx, settings, "max_check_bytes", "2MB")
    ignore = names(settings, "ignore")
    default_key = key_args(ctx, settings.get("key"), None)
    default_ignore = frozenset(ignore or ())

    compile_hints(ctx)
    tools = compile_tools(ctx, default_key, default_ignore)
    gates = compile_gates(ctx, tools)
    signatures = compile_signatures(ctx)
    normalizers = compile_normalizers(ctx)
    loops = compile_loops(ctx)
    workspace = compile_workspace(ctx)
    tests = compile_tests(ctx)
    _report_unused_hints(ctx)
    if has_errors(report.diagnostics):
        return None
    return CompiledPolicy(
        name=_policy_name(composition, header.header if header else None),
        description=word(settings, "description", ""),
        sources=tuple(composition.sources),
        max_scopes=max_scopes or CompiledPolicy.max_scopes,
        scan_limit=scan_limit or CompiledPolicy.scan_limit,
        max_check_bytes=max_check_bytes or CompiledPolicy.max_check_bytes,
        on_internal_error="block" if word(settings, "on_internal_error", "allow") == "block" else "allow",
        deliver_warnings="next_request" if word(settings, "deliver_warnings", "") == "next_request"
        else "tool_message",
        tools=MappingProxyType(tools),
        default_ignore_args=default_ignore,
        default_key_args=default_key,
        gates=gates,
        signatures=signatures,
        normalizers=normalizers,
        workspace=workspace,
        hints=MappingProxyType(dict(ctx.hints)),
        loops=loops,
        tests=tests,
    )


def _policy_name(composition: Composition, header: ast.Statement | None) -> str:
    if header is not None and header.values and isinstance(header.values[0], ast.String):
        return header.values[0].value
    return Path(composition.root).stem


def _max_scopes(ctx: Context, settings: dict[str, Setting]) -> int | None:
    scope = settings.get("scope")
    found = int_value(scope.settings, "max_scopes") if scope else None
    if found is None:
        return None
    if found[0] < 1:
        ctx.report.add("E402", f"`max_scopes` must be at least 1, not {found[0]}", found[1])
        return None
    return found[0]


def _byte_limit(ctx: Context, settings: dict[str, Setting], name: str, example: str) -> int | None:
    value = first_value(settings, name)
    if isinstance(value, ast.Size | ast.Number) and isinstance(value.value, int):
        if value.value >= 1:
            return value.value
        ctx.report.add(
            "E402",
            f"`{name}` must be at least 1 byte, not {value.value}",
            value.span,
            f"e.g. `{name} {example}`",
        )
    return None


def _report_unused_hints(ctx: Context) -> None:
    """W103 for a hint of this file that no rule uses (a base's unused hints are the base's concern)."""
    for declaration in ctx.declarations("hint"):
        unused = declaration.name not in ctx.used_hints and declaration.name not in ctx.broken_hints
        if unused and declaration.file == ctx.composition.root:
            ctx.report.add(
                "W103",
                f"hint `{declaration.name}` is never used",
                declaration.header.values[0].span,
                "name it in a rule (`hint " + declaration.name + "`) or remove it",
            )
