"""What a validator says about a text: valid, an incomplete prefix, a located error, or no answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VerdictStatus = Literal["valid", "incomplete", "invalid", "unavailable"]

SNIPPET_WIDTH = 100
"""Longer source lines are shown as a window of this many characters around the column."""

TAB_SIZE = 4


@dataclass(frozen=True)
class Problem:
    """A genuine syntax error.  ``line`` and ``column`` are 1-based; None when the checker did not say."""

    message: str
    line: int | None = None
    column: int | None = None
    output: str = ""
    """The checker's own text (an exception's text, or a command's output)."""


@dataclass(frozen=True)
class Verdict:
    """A validator's answer.

    ``incomplete``: not valid yet, but a later append can still complete it.
    ``unavailable``: the checker could not run (missing program, timeout); ``reason`` says why.
    """

    status: VerdictStatus
    problem: Problem | None = None
    reason: str = ""


TOO_DEEP = "the text is nested too deeply to check"

VALID = Verdict("valid")
INCOMPLETE = Verdict("incomplete")


def invalid(problem: Problem) -> Verdict:
    return Verdict("invalid", problem)


def unavailable(reason: str) -> Verdict:
    return Verdict("unavailable", reason=reason)


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset (``\\n`` ends a line)."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def snippet(text: str, line: int | None, column: int | None) -> str:
    """The offending line and the one before it, numbered, with a caret under ``column``.

    A line past the end of the text (an error at the end) shows the last line.
    Tabs are expanded so the caret lines up; long lines are cut to a window
    around the column.
    """
    if line is None:
        return ""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "" and len(lines) > 1:
        lines.pop()
    number = max(1, min(line, len(lines)))
    if number != line:
        column = len(lines[number - 1]) + 1
    width = len(str(number))
    shown: list[str] = []
    if number > 1:
        before, _ = _window(lines[number - 2].expandtabs(TAB_SIZE), 1)
        shown.append(f"{number - 1:>{width}} | {before}")
    current = lines[number - 1]
    if column is None:
        shown.append(f"{number:>{width}} | {current.expandtabs(TAB_SIZE)}")
        return "\n".join(shown)
    column = max(1, min(column, len(current) + 1))
    visual = len(current[: column - 1].expandtabs(TAB_SIZE)) + 1
    display, caret = _window(current.expandtabs(TAB_SIZE), visual)
    shown.append(f"{number:>{width}} | {display}")
    shown.append(f"{'':>{width}} | {' ' * (caret - 1)}^")
    return "\n".join(shown)


def _window(line: str, column: int) -> tuple[str, int]:
    """At most SNIPPET_WIDTH characters of ``line`` around ``column``, and the column within them."""
    if len(line) <= SNIPPET_WIDTH:
        return line, column
    start = max(0, min(column - 1 - SNIPPET_WIDTH // 2, len(line) - SNIPPET_WIDTH))
    window = line[start : start + SNIPPET_WIDTH]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + SNIPPET_WIDTH < len(line) else ""
    return prefix + window + suffix, column - start + len(prefix)
