"""Run a recorded or scripted session through a guard, with a virtual file system.

Used by ``policyctl replay`` and ``policyctl test``.  Allowed writes change
the virtual files; blocked ones do not.  A ``stop`` ends that run: its later
events are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from policy.model.compiled import WRITING_ROLES, CompiledPolicy
from policy.model.decision import ALLOW, Decision, most_severe
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.gates import FileEffect, file_effect
from policy.runtime.guard import Guard

EventKind = str  # "turn" | "call" | "result" | "request" (a warning delivered with the next model request)


class VirtualFiles:
    """An in-memory sandbox: path → text."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files: dict[str, str] = dict(files or {})

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def write(self, effect: FileEffect) -> None:
        self.files[effect.path] = effect.after


@dataclass
class Outcome:
    """Every decision taken for one call, in order."""

    call: ToolCall
    decisions: list[tuple[EventKind, Decision]] = field(default_factory=list)
    turn: Decision = ALLOW
    """The loop layers' decision for the batch this call was in (a warning is recorded
    with the result of the call it names; a stop, with that call)."""

    @property
    def decision(self) -> Decision:
        """The most severe decision for this call (ties: the latest)."""
        best = most_severe((decision for _, decision in self.decisions), latest=True)
        return ALLOW if best is None else best

    @property
    def executed(self) -> bool:
        before = (d for kind, d in self.decisions if kind in ("turn", "call"))
        return not any(d.action in ("block", "stop") for d in before)


Listener = Callable[[EventKind, ToolCall, Decision], None]


class Session:
    """Drives a Guard the way a harness does: turn → call → (execute) → result."""

    def __init__(self, policy: CompiledPolicy, files: dict[str, str] | None = None,
                 listener: Listener | None = None) -> None:
        self.policy = policy
        self.files = VirtualFiles(files)
        self.guard = Guard(policy, read_file=self.files.read)
        self.listener = listener
        self.outcomes: dict[tuple[tuple[str, str], str], Outcome] = {}
        self.stopped: set[tuple[str, str]] = set()
        self._effects: dict[tuple[tuple[str, str], str], FileEffect] = {}

    def is_stopped(self, scope: Scope) -> bool:
        return scope.key in self.stopped

    def turn(self, calls: Sequence[ToolCall], scope: Scope) -> list[Outcome]:
        """The model asked for ``calls``: loop layers, then each call's gates (in order)."""
        outcomes = [self._outcome(scope, call) for call in calls]
        if self.is_stopped(scope) or not calls:
            return outcomes
        turn = self.guard.on_turn(calls, scope)
        if turn.action == "warn":  # recorded with its text, as the model will read it
            turn = self.guard.render(turn, next((c for c in calls if c.id == turn.call_id), calls[0]))
        for outcome in outcomes:
            outcome.turn = turn
        if turn.action == "stop":
            self.stopped.add(scope.key)
            target = next((o for o in outcomes if o.call.id == turn.call_id), outcomes[0])
            self._record(target, "turn", turn)
            return outcomes
        for outcome in outcomes:
            call = outcome.call
            decision = self.guard.on_call(call, scope)
            self._record(outcome, "call", decision)
            if decision.action == "block":
                continue
            spec = self.policy.tool(call.name)
            if spec.role in WRITING_ROLES:
                effect = file_effect(spec, call.args, self.files.read)
                if effect is not None:
                    self._effects[(scope.key, call.id)] = effect
        return outcomes

    def result(self, call_id: str, result: ToolResult, scope: Scope) -> Outcome | None:
        """The call returned.  Ignored for calls that were blocked, stopped or never seen."""
        outcome = self.outcomes.get((scope.key, call_id))
        if outcome is None or not outcome.executed or self.is_stopped(scope):
            return outcome
        effect = self._effects.pop((scope.key, call_id), None)
        if effect is not None and result.status == "success":
            self.files.write(effect)
        self._record(outcome, "result", self.guard.on_result(outcome.call, result, scope))
        for warning in self.guard.take_warnings(scope):  # delivered with the next model request
            self._record(self.outcomes.get((scope.key, warning.call_id or "")) or outcome, "request", warning)
        return outcome

    def _outcome(self, scope: Scope, call: ToolCall) -> Outcome:
        outcome = Outcome(call)
        self.outcomes[(scope.key, call.id)] = outcome
        return outcome

    def _record(self, outcome: Outcome, kind: EventKind, decision: Decision) -> None:
        outcome.decisions.append((kind, decision))
        if self.listener is not None:
            self.listener(kind, outcome.call, decision)
