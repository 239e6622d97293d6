"""Text for people: lint diagnostics, policy test results, replayed decisions.

A diagnostic shows its location, message, the source line with a caret, help:

::

    policies/team.policy:12:5: error[E102]: unknown setting `wran`
      12 |     wran 3
         |     ^~~~
    help: did you mean `warn`?

Tabs, control characters, wide characters and very long lines are shown so
that the caret still sits under the offending text.  A test run is a
``PASS name (file:line)`` line per test, each failure's details under it,
then ``N passed, N failed``; a replay is a line per decision that is not
``allow`` (one trace) or a row per session (several).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from policy.model.decision import ACTIONS
from policy.model.diagnostics import Diagnostic, Severity
from policy.reporters import LintReport, relative_location

if TYPE_CHECKING:
    from policy.model.compiled import CompiledPolicy
    from policy.replay.replayer import ReplayResult
    from policy.testing.runner import PolicyTestResult, StepFailure

SourceLookup = Callable[[str], "str | None"]
"""Returns the text of a file a diagnostic points into, or None when it is unavailable."""

MAX_EXCERPT = 100
"""Longest source excerpt shown, in characters; longer lines are windowed around the span."""
CONTEXT_BEFORE = 30
"""Characters kept before the span when a long line is windowed."""
MAX_MESSAGE = 400
"""Longest message or help line shown, in characters (a 10 MB name stays readable)."""
TAB_WIDTH = 4
ELLIPSIS = "…"

_SEVERITY_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow"}


def render_lint(report: LintReport, *, color: bool = False) -> str:
    """``policyctl lint``: ``render_text`` with excerpts from the files the report read."""
    return render_text(report, report.texts.get, color=color)


def render_text(report: LintReport, source: SourceLookup, *, color: bool = False) -> str:
    """Every diagnostic with its excerpt, a blank line between them, then the summary line."""
    blocks = render_diagnostics(report.diagnostics, source, color=color)
    blocks.append(_summary(report, color))
    return "\n\n".join(blocks) + "\n"


def render_diagnostics(diagnostics: Iterable[Diagnostic], source: SourceLookup, *,
                       color: bool = False) -> list[str]:
    """Each diagnostic rendered, every file's text looked up and split into lines once."""
    lines: dict[str, list[str] | None] = {}
    blocks = []
    for diagnostic in diagnostics:
        file = diagnostic.span.file
        if file not in lines:
            text = source(file)
            lines[file] = None if text is None else text.split("\n")
        blocks.append(_render(diagnostic, lines[file], color))
    return blocks


def render_diagnostic(diagnostic: Diagnostic, source_text: str | None, *, color: bool = False) -> str:
    """One diagnostic: the ``file:line:col: error[CODE]: message`` header, excerpt and help.

    ``source_text`` is the text of the file the diagnostic points into (None: no excerpt).
    """
    return _render(diagnostic, None if source_text is None else source_text.split("\n"), color)


def _render(diagnostic: Diagnostic, lines: list[str] | None, color: bool) -> str:
    span = diagnostic.span
    colour = _SEVERITY_COLOURS[diagnostic.severity]
    header = (
        _style(f"{span.file}:{span.line}:{span.column}:", color, bold=True)
        + " "
        + _style(f"{diagnostic.severity.value}[{diagnostic.code}]:", color, fg=colour, bold=True)
        + " "
        + _style(_one_line(diagnostic.message), color, bold=True)
    )
    out = [header]
    if lines is not None and 1 <= span.line <= len(lines):
        out.extend(_excerpt(diagnostic, lines[span.line - 1].removesuffix("\r"), colour, color))
    if diagnostic.help:
        help_lines = [_one_line(line) for line in diagnostic.help.splitlines()]
        out.append(_style("help:", color, fg="cyan", bold=True) + " " + help_lines[0])
        out.extend("      " + line for line in help_lines[1:])
    return "\n".join(out)


def summary_line(report: LintReport) -> str:
    """``2 errors, 1 warning in 3 files`` or ``3 files checked, no problems``."""
    files = _count(report.files, "file")
    if not report.diagnostics:
        return f"{files} checked, no problems"
    parts = []
    if report.errors:
        parts.append(_count(report.errors, "error"))
    if report.warnings:
        parts.append(_count(report.warnings, "warning"))
    return f"{', '.join(parts)} in {files}"


def _summary(report: LintReport, color: bool) -> str:
    line = summary_line(report)
    if report.errors:
        return _style(line, color, fg="red", bold=True)
    if report.warnings:
        return _style(line, color, fg="yellow", bold=True)
    return _style(line, color, fg="green")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _style(text: str, color: bool, *, fg: str | None = None, bold: bool = False) -> str:
    return click.style(text, fg=fg, bold=bold) if color else text


# --- policy test results ---------------------------------------------------------

_MARKS = {True: ("PASS", "green"), False: ("FAIL", "red")}


def render_tests(results: Sequence[PolicyTestResult], *, color: bool = False) -> str:
    """``PASS name (file:line)`` per test, each failure's details under its test, then the summary."""
    lines: list[str] = []
    for result in results:
        mark, colour = _MARKS[result.passed]
        lines.append(f"{_style(mark, color, fg=colour, bold=True)} {result.test.name} "
                     f"({location(result.file, result.line)})")
        for failure in result.failures:
            lines.extend("    " + line for line in format_failure(failure, result.file).split("\n"))
    lines.append(tests_summary(results))
    return "\n".join(lines) + "\n"


def tests_summary(results: Sequence[PolicyTestResult]) -> str:
    """``N passed, N failed``."""
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
        f"{location(file, failure.line)}: {failure.described}",
        f"  expected: {failure.expected}",
        f"  actual:   {failure.actual}",
    ]
    if failure.hint:
        lines.append("  hint:")
        lines.extend(f"    | {line}" for line in failure.hint.split("\n"))
    return "\n".join(lines)


# --- replayed decisions -----------------------------------------------------------

_ACTION_COLOURS = {"hint": "cyan", "warn": "yellow", "block": "red", "stop": "magenta"}


def render_trace(policy: CompiledPolicy, path: Path, result: ReplayResult, *,
                 color: bool = False) -> Iterator[str]:
    """One trace: a header, a line per decision that is not ``allow``, then the counts."""
    yield f"{path} · policy {policy.name}"
    for record in result.records:
        decision = record.decision
        action = _style(f"{decision.action.upper():5}", color, fg=_ACTION_COLOURS.get(decision.action),
                        bold=True)
        first_line = (decision.hint or "").strip().splitlines()[0] if decision.hint else ""
        rule = str(decision.rule) if decision.rule else ""
        yield (f"  line {record.event:<5} {record.call.id:<8} {record.call.name:<12} {action} "
               f"{rule:<28} {first_line}")
    counts = " · ".join(f"{action} {result.decisions[action]}" for action in ACTIONS)
    plural = "s" if result.skipped != 1 else ""
    skipped = f" · {result.skipped} event{plural} after the stop not evaluated" if result.skipped else ""
    yield f"{result.events} events · {counts}{skipped}"


def render_sessions(results: Sequence[ReplayResult], *, color: bool = False) -> Iterator[str]:
    """Several traces: a row of counts per session, then the totals."""
    width = max(len(r.name) for r in results)
    yield f"{'session':<{width}}  events  hint  warn  block  stop"
    for r in results:
        yield (f"{r.name:<{width}}  {r.events:>6}  {r.decisions['hint']:>4}  {r.decisions['warn']:>4}"
               f"  {r.decisions['block']:>5}  {r.decisions['stop']:>4}")
    yield (f"{len(results)} sessions · warned {sum(r.warned for r in results)} · "
           f"blocked {sum(r.blocked for r in results)} · stopped {sum(r.stopped for r in results)}")


# --- the excerpt -------------------------------------------------------------


def _excerpt(diagnostic: Diagnostic, line: str, colour: str, color: bool) -> list[str]:
    """The numbered source line and the caret line under the span (to the line's end if it goes on)."""
    span = diagnostic.span
    start = min(max(span.column - 1, 0), len(line))
    end = span.end_column - 1 if span.end_line == span.line else len(line)
    end = min(max(end, start), len(line))
    shown, caret_at, caret_width = _window(line, start, end)
    number = str(span.line)
    gutter = " " * len(number)
    excerpt = _style(f"  {number} |", color, fg="blue", bold=True) + (f" {shown}" if shown else "")
    caret = "^" + "~" * (max(caret_width, 1) - 1)
    marker = _style(f"  {gutter} |", color, fg="blue", bold=True) + " " + " " * caret_at
    return [excerpt.rstrip(), marker + _style(caret, color, fg=colour, bold=True)]


def _window(line: str, start: int, end: int) -> tuple[str, int, int]:
    """The displayed excerpt of ``line``, and the caret's display offset and width.

    ``start``/``end`` are character offsets of the span within the line.
    """
    low, high = 0, len(line)
    if len(line) > MAX_EXCERPT:
        low = max(0, min(start - CONTEXT_BEFORE, len(line) - MAX_EXCERPT))
        high = min(len(line), low + MAX_EXCERPT)
    before = _printable(line[low:start])
    spanned = _printable(line[low:min(end, high)])
    prefix = ELLIPSIS if low > 0 else ""
    shown = prefix + _printable(line[low:high]) + (ELLIPSIS if high < len(line) else "")
    caret_at = _width(prefix) + _width(before)
    caret_width = _width(spanned) - _width(before)
    return shown, caret_at, caret_width


def _one_line(text: str) -> str:
    """A message shortened to :data:`MAX_MESSAGE` characters, made printable."""
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + ELLIPSIS
    return _printable(text)


def _printable(text: str) -> str:
    """Tabs expanded; control characters shown as their Unicode pictures (␛), never sent raw."""
    if text.isprintable():
        return text
    text = text.expandtabs(TAB_WIDTH)
    return "".join(_picture(c) if not c.isprintable() and c != " " else c for c in text)


def _picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return "\ufffd"


def _width(text: str) -> int:
    """Columns a terminal gives ``text``: wide characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return width
