"""The public entry points: check a policy (all diagnostics) or load it (or raise).

``check_policy`` runs the whole pipeline — read, parse, compose (``extends``,
``disable``), check, compile — and returns the policy (when it compiles) and
every diagnostic, sorted by location.  ``load_policy`` returns the compiled
policy or raises one ``PolicyError`` carrying them all.  ``source_text``
gives renderers the text a diagnostic points into.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import NamedTuple

from policy.language.collector import DiagnosticCollector
from policy.language.compiler import compile_policy
from policy.language.compose import Composition, compose
from policy.model.compiled import CompiledPolicy
from policy.model.diagnostics import Diagnostic, PolicyError, Severity, has_errors, sort_diagnostics


class CheckResult(NamedTuple):
    """What checking one policy found: the policy (None when there are errors) and every diagnostic."""

    policy: CompiledPolicy | None
    diagnostics: list[Diagnostic]

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def check_policy(target: str | PathLike[str]) -> CheckResult:
    """Check ``target`` (a path or ``builtin:NAME``): every diagnostic, and the policy when it compiles.

    Warnings are reported only for the file itself; its bases are checked on their own.
    """
    return _check(target)[0]


def load_policy(target: str | PathLike[str]) -> CompiledPolicy:
    """The compiled policy ``target`` names; raises ``PolicyError`` with every diagnostic on errors."""
    return load_policy_and_files(target)[0]


def load_policy_and_files(target: str | PathLike[str]) -> tuple[CompiledPolicy, dict[str, str]]:
    """``load_policy``, and the text of every file it was built from (policy files and hint
    templates, by path): what a cache of the compiled policy must be keyed by."""
    result, composition = _check(target)
    if result.policy is None:
        raise PolicyError(result.diagnostics)
    return result.policy, dict(composition.texts)


def _check(target: str | PathLike[str]) -> tuple[CheckResult, Composition]:
    report = DiagnosticCollector()
    composition = compose(str(target), report)
    policy = compile_policy(composition, report) if composition.complete else None
    diagnostics = [
        d for d in report.diagnostics if d.severity is Severity.ERROR or d.span.file == composition.root
    ]
    return CheckResult(policy, sort_diagnostics(diagnostics)), composition


def source_text(file: str) -> str | None:
    """The text of a file a diagnostic points into (a policy or a hint template), for excerpts.

    None when it cannot be read.  Decoded as the parser decodes it, so lines and columns agree.
    """
    try:
        data = Path(file).read_bytes()
    except OSError:
        return None
    text = data.decode("utf-8", "replace")
    return text[1:] if text.startswith("\ufeff") else text
