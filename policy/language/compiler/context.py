"""What every compiler step shares: the composed declarations, the report, hint bookkeeping."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from policy.language import ast
from policy.language.checker import Declaration, Setting
from policy.language.collector import DiagnosticCollector, did_you_mean, join_help, quoted_list
from policy.language.compose import Composition
from policy.language.hint_variables import RULE_VARIABLES
from policy.language.spec import Spec
from policy.language.value_forms import usage
from policy.model.diagnostics import Span
from policy.model.hint_template import HintTemplate
from policy.model.variables import COMMON_VARIABLES


@dataclass
class Context:
    composition: Composition
    report: DiagnosticCollector
    hints: dict[str, HintTemplate] = field(default_factory=dict)
    """Compiled hints by name."""
    broken_hints: set[str] = field(default_factory=set)
    """Hints that are declared but failed to compile (already reported)."""
    used_hints: set[str] = field(default_factory=set)

    by_kind: dict[str, list[Declaration]] = field(init=False)
    """The composed declarations by kind, in their order: read once, asked for by every step."""

    def __post_init__(self) -> None:
        self.by_kind = {}
        for declaration in self.composition.declarations.values():
            self.by_kind.setdefault(declaration.kind, []).append(declaration)

    def declarations(self, kind: str) -> Iterator[Declaration]:
        return iter(self.by_kind.get(kind, ()))

    def declared(self, kind: str, name: str) -> bool:
        return (kind, name) in self.composition.declarations

    def require(self, declaration: Declaration, specs: Mapping[str, Spec]) -> bool:
        """Report every required setting the declaration lacks (E104); True when none is missing."""
        settings = declaration.settings
        if all(spec.slot_key in settings for spec in specs.values() if spec.required):
            return True
        return self.require_settings(
            declaration.settings,
            declaration.broken,
            specs,
            declaration.head_span,
            describe(declaration),
        )

    def require_settings(
        self,
        settings: Mapping[str, Setting],
        broken: frozenset[str],
        specs: Mapping[str, Spec],
        span: Span,
        label: str,
    ) -> bool:
        """E104 for each required setting missing from ``settings`` (unless it was written, but broken)."""
        complete = True
        for spec in specs.values():
            if spec.required and spec.slot_key not in settings:
                complete = False
                if spec.slot_key not in broken:
                    self.report.add(
                        "E104",
                        f"{label} needs `{spec.name}`",
                        span,
                        f"add: {usage(spec.name, spec.forms, block=spec.block_required)}",
                    )
        return complete

    def use_hint(
        self, setting: Setting | None, kind: str, extra: frozenset[str] = frozenset()
    ) -> HintTemplate | None:
        """The hint a rule's ``hint NAME`` setting names, checked against the variables ``kind`` provides."""
        if setting is None:
            return None
        value = setting.statement.values[0]
        assert isinstance(value, ast.Name)
        name = value.value
        self.used_hints.add(name)
        template = self.hints.get(name)
        if template is None:
            if name not in self.broken_hints:
                self.report.unknown("E301", "hint", name, value.span, self.hints.keys() | self.broken_hints)
            return None
        provided = COMMON_VARIABLES | RULE_VARIABLES[kind] | extra
        missing = sorted(template.variables - provided)
        if missing:
            rules = kind.replace("_", " ")
            self.report.add(
                "E302",
                f"hint `{name}` uses {quoted_list(missing)}, which {rules} rules do not provide",
                value.span,
                join_help(did_you_mean(missing[0], provided), f"available: {quoted_list(sorted(provided))}"),
            )
        return template


def describe(declaration: Declaration) -> str:
    """``gate `python``` / ``policy`` for messages."""
    return f"{declaration.kind} `{declaration.name}`" if declaration.name else declaration.kind
