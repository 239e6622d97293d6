"""The public entry points: check a policy (all diagnostics) or load it (or raise).

``check_policy`` runs the whole pipeline — read, parse, compose (``extends``,
``disable``), check, compile — and returns the policy (when it compiles) and
every diagnostic, sorted by location.  ``load_policy`` returns the compiled
policy or raises one ``PolicyError`` carrying them all.  A check's ``texts``
give renderers the lines a diagnostic points into: only policy and template
files are ever shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike
from types import MappingProxyType
from typing import Any

from policy.language.collector import DiagnosticCollector
from policy.language.compiler import compile_policy
from policy.language.compose import Composition, compose
from policy.language.gc_pauses import fewer_full_collections
from policy.model.compiled import CompiledPolicy
from policy.model.diagnostics import Diagnostic, PolicyError, Severity, has_errors, sort_diagnostics


@dataclass(frozen=True)
class CheckResult:
    """What checking one policy found: the policy (None when there are errors) and every diagnostic.

    It unpacks as ``policy, diagnostics = check_policy(path)``.
    """

    policy: CompiledPolicy | None
    diagnostics: list[Diagnostic]
    texts: Mapping[str, str] = field(default_factory=dict)
    """The text of every policy and template file read, by the path diagnostics show: the only
    files whose lines a diagnostic's excerpt may show."""

    def __iter__(self) -> Iterator[Any]:
        return iter((self.policy, self.diagnostics))

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


AllowedPaths = Iterable[str | PathLike[str]]
"""Folders whose files ``extends`` and ``hint … file`` may name besides the naming file's own tree."""


def check_policy(target: str | PathLike[str], *, allow_paths: AllowedPaths = ()) -> CheckResult:
    """Check ``target`` (a path or ``builtin:NAME``): every diagnostic, and the policy when it compiles.

    Warnings are reported only for the file itself; its bases are checked on their own.
    ``extends`` and ``hint … file`` name files inside the folder tree of the file that
    names them, or inside one of ``allow_paths`` (the CLI's ``--allow-path``).
    """
    return _check(target, allow_paths)[0]


def load_policy(target: str | PathLike[str], *, allow_paths: AllowedPaths = ()) -> CompiledPolicy:
    """The compiled policy ``target`` names; raises ``PolicyError`` with every diagnostic on errors."""
    return load_policy_and_files(target, allow_paths=allow_paths)[0]


def load_policy_and_files(target: str | PathLike[str], *,
                          allow_paths: AllowedPaths = ()) -> tuple[CompiledPolicy, dict[str, str]]:
    """``load_policy``, and the text of every file it was built from (policy files and hint
    templates, by path): what a cache of the compiled policy must be keyed by."""
    result, composition = _check(target, allow_paths)
    if result.policy is None:
        raise PolicyError(result.diagnostics)
    return result.policy, dict(composition.texts)


def _check(target: str | PathLike[str], allow_paths: AllowedPaths) -> tuple[CheckResult, Composition]:
    report = DiagnosticCollector()
    with fewer_full_collections():
        composition = compose(str(target), report, allow_paths=allow_paths)
        policy = compile_policy(composition, report) if composition.complete else None
    diagnostics = [
        d for d in report.diagnostics if d.severity is Severity.ERROR or d.span.file == composition.root
    ]
    result = CheckResult(policy, sort_diagnostics(diagnostics), MappingProxyType(composition.texts))
    return result, composition
