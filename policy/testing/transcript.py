"""The hints a policy test produced, as a Markdown page a reviewer can read in a diff.

One section per call that drew a decision (its arguments, the result it was
given, the action and rule, the hint exactly as the model sees it); runs of
identical calls that were allowed are folded into one line.  Nothing in it
depends on the machine or on line numbers, so snapshots of it only change
when the hints do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from policy.model.events import ToolResult
from policy.model.variables import call_summary
from policy.testing.runner import CallRecord, PolicyTestResult, describe_decision

RESULT_EXCERPT = 400
"""Longest tool result shown; longer ones keep their start and end."""

_BACKTICKS = re.compile(r"`+")


def hint_transcript(result: PolicyTestResult) -> str:
    """The test's calls and the hints they drew, as Markdown (ends with a newline)."""
    lines = [f"# {result.test.name}", "", f"Policy `{result.policy.name}`.", ""]
    for first, last, record in _folded(result.calls):
        lines.extend(_section(first, last, record))
    if not result.calls:
        lines.append("No calls.")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _folded(records: tuple[CallRecord, ...]) -> Iterator[tuple[int, int, CallRecord]]:
    """(first, last, record): consecutive allowed calls with the same arguments and result fold into one."""
    index = 0
    while index < len(records):
        record = records[index]
        end = index
        if record.decision.action == "allow":
            while end + 1 < len(records) and _same_allowed(records[end + 1], record):
                end += 1
        yield index + 1, end + 1, record
        index = end + 1


def _same_allowed(other: CallRecord, record: CallRecord) -> bool:
    return (other.decision.action == "allow" and other.call.name == record.call.name
            and other.call.args == record.call.args and other.result == record.result)


def _section(first: int, last: int, record: CallRecord) -> list[str]:
    calls = f"Call {first}" if first == last else f"Calls {first} to {last} ({last - first + 1} identical)"
    lines = [f"## {calls}: {_inline(call_summary(record.call, limit=200))}", ""]
    if record.result is not None and not record.result.content:
        lines.extend([f"Result ({_status(record.result)}): empty.", ""])
    elif record.result is not None:
        excerpt = _excerpt(record.result.content)
        lines.extend([f"Result ({_status(record.result)}):", "", *_fenced(excerpt), ""])
    lines.append(f"Decision: **{describe_decision(record.decision)}**")
    lines.append("")
    if record.decision.hint:
        lines.extend(_fenced(record.decision.hint))
        lines.append("")
    return lines


def _status(result: ToolResult) -> str:
    return "ok" if result.status == "success" else "error"


def _excerpt(text: str) -> str:
    if len(text) <= RESULT_EXCERPT:
        return text
    half = RESULT_EXCERPT // 2
    return text[:half] + " … " + text[-half:]


def _inline(text: str) -> str:
    """Inline code that survives backticks inside ``text``."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _fenced(text: str) -> list[str]:
    """A fenced text block longer than any backtick run inside ``text``."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *text.rstrip("\n").split("\n"), fence]
