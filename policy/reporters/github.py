"""Diagnostics as GitHub Actions workflow commands, shown as annotations on the pull request.

``::error file=policies/a.policy,line=3,col=5,endLine=3,endColumn=9,title=E102::unknown setting``
"""

from __future__ import annotations

from pathlib import Path

from policy.model.diagnostics import Diagnostic, Severity
from policy.reporters import LintReport, relative_location


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
