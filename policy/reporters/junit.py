"""JUnit XML for CI test reports: one ``testsuite`` per policy, one ``testcase`` per test."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from policy.reporters import relative_location
from policy.reporters.text import format_failure

if TYPE_CHECKING:
    from policy.testing.runner import PolicyTestResult


def render_tests(results: Sequence[PolicyTestResult], *, color: bool = False) -> str:
    """The whole document, with each failed test's every failure as its ``failure`` text."""
    import xml.etree.ElementTree as ET

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
            message = f"{first.described}: expected {first.expected}, got {first.actual}"
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = "\n\n".join(format_failure(f, result.file) for f in result.failures)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
