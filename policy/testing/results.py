"""Policy test results for people (text), programs (JSON), CI systems (JUnit XML, GitHub annotations).

Every renderer takes the results in run order and returns the whole output
as one string.  The text and GitHub forms end with the line ``N passed, N failed``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

import click

from policy.reporters import relative_location
from policy.reporters.github import escape_data, escape_property
from policy.testing.runner import PolicyTestResult, StepFailure, describe_step

_MARKS = {True: ("PASS", "green"), False: ("FAIL", "red")}


def summary_line(results: Sequence[PolicyTestResult]) -> str:
    passed = sum(1 for r in results if r.passed)
    return f"{passed} passed, {len(results) - passed} failed"


def location(file: str | None, line: int | None) -> str:
    """``policies/team.policy:12`` (relative to the working directory when inside it)."""
    if file is None:
        return "<unknown>"
    shown = relative_location(file) or file
    return f"{shown}:{line}" if line is not None else shown


def format_failure(failure: StepFailure, file: str | None) -> str:
    """One failed step: where it is, what was expected, what happened, and the hint the model got."""
    lines = [
        f"{location(file, failure.line)}: {describe_step(failure.step)}",
        f"  expected: {failure.expected}",
        f"  actual:   {failure.actual}",
    ]
    if failure.hint:
        lines.append("  hint:")
        lines.extend(f"    | {line}" for line in failure.hint.split("\n"))
    return "\n".join(lines)


def render_text(results: Sequence[PolicyTestResult], *, color: bool = False) -> str:
    """``PASS name (file:line)`` per test, each failure's details under its test, then the summary."""
    lines: list[str] = []
    for result in results:
        mark, colour = _MARKS[result.passed]
        shown = click.style(mark, fg=colour, bold=True) if color else mark
        lines.append(f"{shown} {result.test.name} ({location(result.file, result.line)})")
        for failure in result.failures:
            lines.extend("    " + line for line in format_failure(failure, result.file).split("\n"))
    lines.append(summary_line(results))
    return "\n".join(lines) + "\n"


def render_json(results: Sequence[PolicyTestResult]) -> str:
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
            {
                "line": f.line,
                "step": describe_step(f.step),
                "expected": f.expected,
                "actual": f.actual,
                "hint": f.hint,
            }
            for f in result.failures
        ],
    }


def render_junit(results: Sequence[PolicyTestResult]) -> str:
    """JUnit XML: one ``testsuite`` per policy, one ``testcase`` per test."""
    root = ET.Element("testsuites", tests=str(len(results)),
                      failures=str(sum(1 for r in results if not r.passed)))
    suites: dict[str, ET.Element] = {}
    for result in results:
        suite = suites.get(result.policy.name)
        if suite is None:
            suite = suites[result.policy.name] = ET.SubElement(root, "testsuite", name=result.policy.name,
                                                               tests="0", failures="0")
        suite.set("tests", str(int(suite.get("tests", "0")) + 1))
        case = ET.SubElement(suite, "testcase", name=result.test.name, classname=result.policy.name)
        if result.file is not None:
            case.set("file", relative_location(result.file) or result.file)
        if result.line is not None:
            case.set("line", str(result.line))
        if result.failures:
            suite.set("failures", str(int(suite.get("failures", "0")) + 1))
            first = result.failures[0]
            failure = ET.SubElement(case, "failure",
                                    message=f"{describe_step(first.step)}: expected {first.expected}, "
                                            f"got {first.actual}")
            failure.text = "\n\n".join(format_failure(f, result.file) for f in result.failures)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def render_github(results: Sequence[PolicyTestResult]) -> str:
    """An ``::error`` command per failed step (an annotation on the policy file), then the summary."""
    lines = []
    for result in results:
        for failure in result.failures:
            properties = {"title": f"policy test failed: {result.test.name}"}
            if result.file is not None:
                properties["file"] = relative_location(result.file) or result.file
            if failure.line is not None:
                properties["line"] = str(failure.line)
            listed = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
            message = f"{describe_step(failure.step)}\nexpected: {failure.expected}\nactual: {failure.actual}"
            if failure.hint:
                message += f"\nhint:\n{failure.hint}"
            lines.append(f"::error {listed}::{escape_data(message)}")
    lines.append(summary_line(results))
    return "\n".join(lines) + "\n"
