"""Run a policy's ``test`` blocks: each is a small scripted session with expectations.

Semantics of the steps (``docs/language.md``, "Tests"):

- ``file PATH CONTENT`` puts a file into the session's virtual file system;
  written after a call and before its result, it is what the call left in
  that file, and the test runs with the virtual files as the guard's
  workspace (sweeps and workspace progress, as in a trace with ``files``);
- ``call`` / ``turn`` run the loop layers over the batch, then each call's
  write gates; an allowed write changes the virtual files once its result is ok;
- ``result ok|error TEXT`` is the result of the most recent call (for a turn,
  of its last call).  A call given no result gets an implicit ``ok ""``
  before the next call or turn runs;
- ``expect …`` checks the most severe decision taken so far for the most
  recent call (its turn's, its own and its result's): the action, the rule
  that fired (``expect block gate python``), or the rendered hint
  (``expect hint contains "…"``, ``expect hint matches /…/``).

A hint template that fails to render (the guard falls back to a plain line
and logs it) fails the step that rendered it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from policy.model.compiled import CompiledPolicy, PolicyTest, TestStep
from policy.model.decision import ALLOW, Decision, most_severe
from policy.model.events import Scope, ToolCall, ToolResult
from policy.replay.harness import Outcome, Session

IMPLICIT_RESULT = ToolResult(content="", status="success")
HINT_LOGGER = "policy.hints"


@dataclass(frozen=True)
class StepFailure:
    """An ``expect`` that did not hold, or a step that could not run."""

    step: TestStep
    expected: str
    actual: str
    hint: str | None = None
    """The rendered hint of the decision that was checked."""

    @property
    def line(self) -> int | None:
        return self.step.span.line if self.step.span else None

    @property
    def described(self) -> str:
        """The step as the policy file writes it (``describe_step``)."""
        return describe_step(self.step)


@dataclass(frozen=True)
class CallRecord:
    """One call of a test run: what it was, the result it was given, and what the guard decided."""

    call: ToolCall
    result: ToolResult | None
    """None when the call never ran (blocked, stopped) or the test ended before its result."""
    decision: Decision
    """The most severe decision for this call (its turn's, its own and its result's)."""


@dataclass(frozen=True)
class PolicyTestResult:
    """The outcome of one ``test`` block."""

    policy: CompiledPolicy
    test: PolicyTest
    failures: tuple[StepFailure, ...]
    calls: tuple[CallRecord, ...]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def file(self) -> str | None:
        return self.test.span.file if self.test.span else None

    @property
    def line(self) -> int | None:
        return self.test.span.line if self.test.span else None


def run_tests(policy: CompiledPolicy, tests: Iterable[PolicyTest] | None = None) -> list[PolicyTestResult]:
    """Run ``tests`` (default: all of the policy's own) in order, each in a fresh session."""
    return [run_test(policy, test) for test in (policy.tests if tests is None else tests)]


def run_test(policy: CompiledPolicy, test: PolicyTest) -> PolicyTestResult:
    """Run one test in a fresh session with its own virtual file system."""
    run = _Run(policy, workspace=_describes_effects(test))
    failures: list[StepFailure] = []
    with _render_errors() as errors:
        for step in test.steps:
            failure = run.step(step)
            if failure is not None:
                failures.append(failure)
            failures.extend(StepFailure(step, "every hint renders", actual=error) for error in errors)
            errors.clear()
    return PolicyTestResult(policy=policy, test=test, failures=tuple(failures), calls=run.records())


def _describes_effects(test: PolicyTest) -> bool:
    """Does a ``file`` step come between a call and its result (what the call left in a file)?"""
    awaiting = False
    for step in test.steps:
        if step.kind == "turn":
            awaiting = True
        elif step.kind == "result":
            awaiting = False
        elif step.kind == "file" and awaiting:
            return True
    return False


def describe_decision(decision: Decision) -> str:
    """``block gate python``, ``warn loop repeat``, ``allow``."""
    return f"{decision.action} {decision.rule}" if decision.rule else decision.action


def describe_step(step: TestStep) -> str:
    """A test step written the way the policy file writes it (first 80 characters of text)."""
    if step.kind == "expect":
        if step.hint_contains is not None:
            return f"expect hint contains {_quote(step.hint_contains)}"
        if step.hint_matches is not None:
            return f"expect hint matches /{step.hint_matches.source}/{step.hint_matches.flags}"
        return " ".join(part for part in ("expect", step.action, step.rule) if part)
    if step.kind == "result":
        return f"result {'ok' if step.status == 'success' else 'error'} {_quote(step.content or '')}"
    if step.kind == "file":
        return f"file {_quote(step.path or '')}"
    names = ", ".join(call.name for call in step.calls)
    return f"call {names}" if len(step.calls) == 1 else f"turn {{ {names} }}"


def _quote(text: str, limit: int = 80) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return '"' + shown.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Run:
    """The state of one running test: the session, the latest turn, calls awaiting a result."""

    def __init__(self, policy: CompiledPolicy, *, workspace: bool = False) -> None:
        self.session = Session(policy, workspace=workspace)
        self.workspace = workspace
        self.effects: dict[str, str | None] = {}
        """Files the awaited call leaves, given to its result."""
        self.scope = Scope(thread_id="policy-test", run_id="run")
        self.outcomes: list[Outcome] = []
        self.latest_turn: list[Outcome] = []
        self.latest_turn_skipped = False
        """The latest turn came after a ``stop``: nothing evaluated it."""
        self.awaiting: list[Outcome] = []
        self.results: dict[str, ToolResult] = {}

    def step(self, step: TestStep) -> StepFailure | None:
        if step.kind == "file":
            if self.workspace and self.awaiting:
                self.effects[step.path or ""] = step.content or ""
            else:
                self.session.files.put(step.path or "", step.content or "")
            return None
        if step.kind == "turn":
            self._turn(step)
            return None
        if step.kind == "result":
            return self._result(step)
        return self._expect(step)

    def records(self) -> tuple[CallRecord, ...]:
        return tuple(
            CallRecord(call=o.call, result=self.results.get(o.call.id), decision=self._decision(o))
            for o in self.outcomes
        )

    def _turn(self, step: TestStep) -> None:
        self._give_implicit_results(self.awaiting)
        start = len(self.outcomes) + 1
        calls = [ToolCall(f"c{start + i}", c.name, dict(c.args)) for i, c in enumerate(step.calls)]
        self.latest_turn_skipped = self.session.is_stopped(self.scope)
        self.latest_turn = self.session.turn(calls, self.scope)
        self.outcomes.extend(self.latest_turn)
        self.awaiting = list(self.latest_turn)

    def _result(self, step: TestStep) -> StepFailure | None:
        if not self.latest_turn:
            return StepFailure(step, expected="a call before this result", actual="no call yet")
        target = self.latest_turn[-1]
        if target not in self.awaiting:
            return StepFailure(step, expected=f"one result for call {target.call.id}",
                               actual="it already has a result")
        self._give_implicit_results([o for o in self.awaiting if o is not target])
        self._give(target, ToolResult(content=step.content or "", status=step.status))
        return None

    def _give_implicit_results(self, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            self._give(outcome, IMPLICIT_RESULT)

    def _give(self, outcome: Outcome, result: ToolResult) -> None:
        self.awaiting.remove(outcome)
        if outcome.executed and not self.session.is_stopped(self.scope):
            self.results[outcome.call.id] = result
            effects, self.effects = self.effects, {}
            self.session.result(outcome.call.id, result, self.scope, effects)

    def _expect(self, step: TestStep) -> StepFailure | None:
        if not self.latest_turn:
            return StepFailure(step, expected="a call before this expect", actual="no call yet")
        if self.latest_turn_skipped:
            return StepFailure(step, _expected(step), actual="nothing: the run had already been stopped")
        decision = self._decision(self.latest_turn[-1])
        wrong_rule = step.rule is not None and step.rule not in _rules(decision)
        if step.action is not None and (decision.action != step.action or wrong_rule):
            return StepFailure(step, _expected(step), actual=describe_decision(decision), hint=decision.hint)
        if step.hint_contains is not None and step.hint_contains not in (decision.hint or ""):
            return StepFailure(step, _expected(step), actual=_hint_summary(decision), hint=decision.hint)
        pattern = step.hint_matches
        if pattern is not None and (decision.hint is None or pattern.search(decision.hint) is None):
            return StepFailure(step, _expected(step), actual=_hint_summary(decision), hint=decision.hint)
        return None

    def _decision(self, outcome: Outcome) -> Decision:
        """The most severe of the call's turn, call and result decisions (ties: the latest)."""
        best = most_severe((outcome.turn, *(d for _, d in outcome.decisions)), latest=True)
        return ALLOW if best is None else best


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _render_errors() -> Iterator[list[str]]:
    """The render failures the hint logger reports while the block runs."""
    handler = _Collect()
    logger = logging.getLogger(HINT_LOGGER)
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


def _expected(step: TestStep) -> str:
    if step.hint_contains is not None:
        return f"a hint containing {_quote(step.hint_contains)}"
    if step.hint_matches is not None:
        return f"a hint matching /{step.hint_matches.source}/{step.hint_matches.flags}"
    return " ".join(part for part in (step.action, step.rule) if part)


def _rules(decision: Decision) -> set[str]:
    """The rules behind a decision at its own severity (a combined decision lists every one)."""
    return {str(part.rule) for part in (decision, *decision.parts)
            if part.rule is not None and (part is decision or part.action == decision.action)}


def _hint_summary(decision: Decision) -> str:
    if decision.hint is None:
        return f"{describe_decision(decision)} with no hint"
    return f"{describe_decision(decision)} with a different hint"
