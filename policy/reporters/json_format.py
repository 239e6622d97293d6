"""Diagnostics as one JSON document, for scripts and editors.

``{"diagnostics": [{"file", "line", "column", "end_line", "end_column", "code",
"severity", "message", "help"}, ...], "summary": {"files", "errors", "warnings"}}``
"""

from __future__ import annotations

import json
from typing import Any

from policy.model.diagnostics import Diagnostic
from policy.reporters import LintReport


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
