"""Every output format, one module each, and the commands it serves: the one table
``policyctl lint``, ``test`` and ``replay`` choose their renderer from.

Each module renders everything its format shows: lint diagnostics
(``render_lint``), policy test results (``render_tests``), one replayed trace
(``render_trace``) and several (``render_sessions``).  ``color`` is for the
text format; the others ignore it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from policy.reporters import LintReport, github, json_format, junit, sarif, text

if TYPE_CHECKING:
    from policy.model.compiled import CompiledPolicy
    from policy.replay.replayer import ReplayResult
    from policy.testing.runner import PolicyTestResult

Command = Literal["lint", "test", "replay"]


class LintRenderer(Protocol):
    def __call__(self, report: LintReport, *, color: bool = False) -> str: ...


class TestsRenderer(Protocol):
    def __call__(self, results: Sequence[PolicyTestResult], *, color: bool = False) -> str: ...


class TraceRenderer(Protocol):
    def __call__(self, policy: CompiledPolicy, path: Path, result: ReplayResult, *,
                 color: bool = False) -> Iterator[str]: ...


class SessionsRenderer(Protocol):
    def __call__(self, results: Sequence[ReplayResult], *, color: bool = False) -> Iterator[str]: ...


@dataclass(frozen=True)
class Format:
    """One output format: what it is for, and its renderer for each command it serves (None: not
    offered there)."""

    help: str
    lint: LintRenderer | None = None
    tests: TestsRenderer | None = None
    trace: TraceRenderer | None = None
    """One replayed trace, as lines."""
    sessions: SessionsRenderer | None = None
    """Several replayed traces, as lines."""

    def serves(self, command: Command) -> bool:
        if command == "replay":
            return self.trace is not None and self.sessions is not None
        return (self.lint if command == "lint" else self.tests) is not None


FORMATS: dict[str, Format] = {
    "text": Format("for people", text.render_lint, text.render_tests, text.render_trace,
                   text.render_sessions),
    "json": Format("one document", json_format.render_lint, json_format.render_tests,
                   json_format.render_trace, json_format.render_sessions),
    "junit": Format("XML for CI test reports", tests=junit.render_tests),
    "github": Format("workflow annotations", github.render_lint, github.render_tests),
    "sarif": Format("SARIF 2.1.0", lint=sarif.render_lint),
}
"""Every output format, by the name ``--format`` takes."""


def formats_for(command: Command) -> tuple[str, ...]:
    """The names of the formats a command offers, in table order."""
    return tuple(name for name, output in FORMATS.items() if output.serves(command))


def formats_help(command: Command) -> str:
    """``--format``'s help: each format the command offers and what it is for."""
    return "; ".join(f"{name}: {FORMATS[name].help}" for name in formats_for(command)) + "."


def render_lint(name: str, report: LintReport, *, color: bool = False) -> str:
    render = FORMATS[name].lint
    assert render is not None, f"{name} renders no lint report"
    return render(report, color=color)


def render_tests(name: str, results: Sequence[PolicyTestResult], *, color: bool = False) -> str:
    render = FORMATS[name].tests
    assert render is not None, f"{name} renders no test results"
    return render(results, color=color)


def render_trace(name: str, policy: CompiledPolicy, path: Path, result: ReplayResult, *,
                 color: bool = False) -> Iterator[str]:
    render = FORMATS[name].trace
    assert render is not None, f"{name} renders no trace"
    return render(policy, path, result, color=color)


def render_sessions(name: str, results: Sequence[ReplayResult], *, color: bool = False) -> Iterator[str]:
    render = FORMATS[name].sessions
    assert render is not None, f"{name} renders no sessions"
    return render(results, color=color)
