"""GitHub Actions workflow commands, shown as annotations on the pull request: lint
diagnostics and failed policy test steps.

``::error file=policies/a.policy,line=3,col=5,endLine=3,endColumn=9,title=E102::unknown setting``
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from policy.model.diagnostics import Diagnostic, Severity
from policy.reporters import LintReport, relative_location

if TYPE_CHECKING:
    from policy.testing.runner import PolicyTestResult


def render_lint(report: LintReport, *, color: bool = False) -> str:
    """``policyctl lint``: ``render_github``."""
    return render_github(report)


def render_tests(results: Sequence[PolicyTestResult], *, color: bool = False) -> str:
    """An ``::error`` command per failed step (an annotation on the policy file), then
    ``N passed, N failed``."""
    from policy.reporters.text import tests_summary

    lines = []
    for result in results:
        for failure in result.failures:
            properties = {"title": f"policy test failed: {result.test.name}"}
            if result.file is not None:
                properties["file"] = relative_location(result.file) or result.file
            if failure.line is not None:
                properties["line"] = str(failure.line)
            listed = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
            message = f"{failure.described}\nexpected: {failure.expected}\nactual: {failure.actual}"
            if failure.hint:
                message += f"\nhint:\n{failure.hint}"
            lines.append(f"::error {listed}::{escape_data(message)}")
    lines.append(tests_summary(results))
    return "\n".join(lines) + "\n"


def render_github(report: LintReport, *, base: Path | None = None) -> str:
    """One workflow command per diagnostic; file paths relative to ``base`` (default: cwd)."""
    return "".join(github_command(d, base=base) + "\n" for d in report.diagnostics)


def github_command(diagnostic: Diagnostic, *, base: Path | None = None) -> str:
    span = diagnostic.span
    command = "error" if diagnostic.severity is Severity.ERROR else "warning"
    properties = {
        "file": relative_location(span.file, base) or span.file,
        "line": span.line,
        "col": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
        "title": diagnostic.code,
    }
    listed = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    message = diagnostic.message + (f"\nhelp: {diagnostic.help}" if diagnostic.help else "")
    return f"::{command} {listed}::{escape_data(message)}"


def escape_data(text: str) -> str:
    """Escape a command's message the way GitHub's toolkit does (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: as for data, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
