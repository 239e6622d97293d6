"""Diagnostics as SARIF 2.1.0, for code-scanning dashboards.

One run; the tool driver ``policyctl`` lists every diagnostic code as a rule
(the rule id is the stable code), and each result points at a region of an
artifact whose URI is relative to the working directory when the file lies
inside it.
"""

from __future__ import annotations

import json
from contextlib import suppress
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

from policy.language.codes import CODES
from policy.model.diagnostics import Diagnostic, Severity
from policy.reporters import LintReport, relative_location

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SOURCE_ROOT = "SRCROOT"
"""The ``uriBaseId`` of relative artifact URIs."""

_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def render_lint(report: LintReport, *, color: bool = False) -> str:
    """``policyctl lint``: ``render_sarif``."""
    return render_sarif(report)


def render_sarif(report: LintReport, *, base: Path | None = None) -> str:
    """The SARIF log; relative URIs are relative to ``base`` (default: the working directory)."""
    root = (base or Path.cwd()).absolute()
    rule_index = {code: i for i, code in enumerate(CODES)}
    run: dict[str, Any] = {
        "tool": {"driver": _driver()},
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": root.as_uri() + "/"}},
        "results": [_result(d, rule_index, root) for d in report.diagnostics],
    }
    log = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


def _driver() -> dict[str, Any]:
    driver: dict[str, Any] = {"name": "policyctl"}
    with suppress(metadata.PackageNotFoundError):  # a checkout that is not installed has no version
        driver["version"] = metadata.version("policyctl")
    driver["rules"] = [
        {
            "id": code.code,
            "shortDescription": {"text": code.title},
            "defaultConfiguration": {"level": _LEVELS[code.severity]},
        }
        for code in CODES.values()
    ]
    return driver


def _result(diagnostic: Diagnostic, rule_index: dict[str, int], root: Path) -> dict[str, Any]:
    span = diagnostic.span
    text = diagnostic.message + (f"\nhelp: {diagnostic.help}" if diagnostic.help else "")
    result: dict[str, Any] = {"ruleId": diagnostic.code}
    if diagnostic.code in rule_index:
        result["ruleIndex"] = rule_index[diagnostic.code]
    result |= {
        "level": _LEVELS[diagnostic.severity],
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(span.file, root),
                    "region": {
                        "startLine": span.line,
                        "startColumn": span.column,
                        "endLine": span.end_line,
                        "endColumn": span.end_column,
                    },
                }
            }
        ],
    }
    return result


def _artifact(file: str, root: Path) -> dict[str, str]:
    relative = relative_location(file, root)
    if relative is not None:
        return {"uri": quote(relative), "uriBaseId": SOURCE_ROOT}
    path = Path(file)
    if path.is_absolute() or path.exists():
        return {"uri": path.absolute().as_uri()}
    return {"uri": quote(file, safe="/:")}  # not a file on disk, e.g. builtin:default
