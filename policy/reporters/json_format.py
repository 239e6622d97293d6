"""JSON for scripts and editors: lint diagnostics, policy test results, replayed decisions.

Lint: ``{"diagnostics": [{"file", "line", "column", "end_line", "end_column",
"code", "severity", "message", "help"}, ...], "summary": {"files", "errors",
"warnings"}}``.  Tests: ``{"tests": [...], "summary": {"passed", "failed"}}``.
Replay: JSON Lines, an object per decision that is not ``allow`` then
``{"summary": ...}`` (one trace), or an object per session (several).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policy.model.diagnostics import Diagnostic
from policy.reporters import LintReport, relative_location

if TYPE_CHECKING:
    from policy.model.compiled import CompiledPolicy
    from policy.replay.replayer import ReplayResult
    from policy.testing.runner import PolicyTestResult


def render_lint(report: LintReport, *, color: bool = False) -> str:
    """``policyctl lint``: ``render_json``."""
    return render_json(report)


def render_json(report: LintReport) -> str:
    document = {
        "diagnostics": [diagnostic_json(d) for d in report.diagnostics],
        "summary": {"files": report.files, "errors": report.errors, "warnings": report.warnings},
    }
    return json.dumps(document, indent=2) + "\n"


def diagnostic_json(diagnostic: Diagnostic) -> dict[str, Any]:
    span = diagnostic.span
    return {
        "file": span.file,
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
        "code": diagnostic.code,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "help": diagnostic.help,
    }


def render_tests(results: Sequence[PolicyTestResult], *, color: bool = False) -> str:
    """One JSON document: every test with its failures, and the counts."""
    passed = sum(1 for r in results if r.passed)
    document = {
        "tests": [_test_json(r) for r in results],
        "summary": {"passed": passed, "failed": len(results) - passed},
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def _test_json(result: PolicyTestResult) -> dict[str, Any]:
    return {
        "policy": result.policy.name,
        "name": result.test.name,
        "file": relative_location(result.file) or result.file if result.file else None,
        "line": result.line,
        "passed": result.passed,
        "failures": [
            {"line": f.line, "step": f.described, "expected": f.expected, "actual": f.actual, "hint": f.hint}
            for f in result.failures
        ],
    }


def render_trace(policy: CompiledPolicy, path: Path, result: ReplayResult, *,
                 color: bool = False) -> Iterator[str]:
    """One trace: an object per decision that is not ``allow``, then the counts."""
    for record in result.records:
        yield json.dumps(record.to_json(), ensure_ascii=False)
    yield json.dumps({"summary": result.summary()})


def render_sessions(results: Sequence[ReplayResult], *, color: bool = False) -> Iterator[str]:
    """Several traces: an object per session."""
    for result in results:
        yield json.dumps({"session": result.name, "summary": result.summary(), "errors": len(result.errors)})
