"""Run a recorded or scripted session through a guard, with a virtual file system.

Used by ``policyctl replay`` and ``policyctl test``.  Allowed writes change
the virtual files; blocked ones do not.  A ``stop`` ends that run: its later
events are skipped.  With ``workspace=True`` the virtual files are also the
guard's workspace, and a result may carry what the call left in them (a
trace's ``files`` snapshot), so sweeps and workspace progress are replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from policy.model.compiled import WRITING_ROLES, CompiledPolicy
from policy.model.decision import ALLOW, Decision, most_severe
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.gates import FileEffect, TooLarge, bounded_effect
from policy.runtime.guard import Guard
from policy.runtime.workspace.listed import ListedWorkspace
from policy.runtime.workspace.snapshot import FileStat

VIRTUAL_FILE_LIMIT = 256 << 20
"""The largest text a replayed write leaves in the virtual files (the gates' own bound is the
policy's ``max_check_bytes``; a write over this one leaves its file unknown, read as absent)."""

EventKind = str  # "turn" | "call" | "result" | "request" (a warning delivered with the next model request)


class VirtualFiles:
    """An in-memory sandbox: path → text, with a version per path that stands for its change time."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files: dict[str, str] = dict(files or {})
        self.versions: dict[str, int] = dict.fromkeys(self.files, 1)
        self._clock = 1

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def write(self, effect: FileEffect) -> None:
        self.put(effect.path, effect.after)

    def put(self, path: str, text: str | None) -> None:
        """Set a file's text (None: delete it)."""
        self._clock += 1
        if text is None:
            self.files.pop(path, None)
            self.versions.pop(path, None)
        else:
            self.files[path] = text
            self.versions[path] = self._clock

    def listing(self) -> list[FileStat]:
        """Every file as a workspace lister lists it: (path, size, version, version)."""
        return [(path, len(text.encode("utf-8", "surrogateescape")), self.versions.get(path, 0),
                 self.versions.get(path, 0)) for path, text in self.files.items()]

    def workspace(self) -> ListedWorkspace:
        """The files as a workspace rooted at ``/`` (a relative path is read as one under it)."""
        return ListedWorkspace(self.listing, self._read_under_root, root="/")

    def _read_under_root(self, path: str) -> str | None:
        text = self.files.get(path)
        return text if text is not None else self.files.get(path[1:])


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
                 listener: Listener | None = None, *, workspace: bool = False) -> None:
        self.policy = policy
        self.files = VirtualFiles(files)
        self.guard = Guard(policy, read_file=self.files.read,
                           workspace=self.files.workspace() if workspace else None)
        self.listener = listener
        self.outcomes: dict[tuple[tuple[str, str], str], Outcome] = {}
        self.stopped: set[tuple[str, str]] = set()
        self._effects: dict[tuple[tuple[str, str], str], FileEffect | TooLarge] = {}
        """What each allowed write will do to the virtual files when it succeeds (``TooLarge``: its
        text would be over ``VIRTUAL_FILE_LIMIT``, so the file is no longer known)."""

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
                effect = bounded_effect(spec, call.args, self.files.read, VIRTUAL_FILE_LIMIT)
                if effect is not None:
                    self._effects[(scope.key, call.id)] = effect
        return outcomes

    def result(self, call_id: str, result: ToolResult, scope: Scope,
               files: Mapping[str, str | None] | None = None) -> Outcome | None:
        """The call returned, leaving ``files`` (path → text, None: deleted) as they now are.
        Ignored for calls that were blocked, stopped or never seen."""
        outcome = self.outcomes.get((scope.key, call_id))
        if outcome is None or not outcome.executed or self.is_stopped(scope):
            return outcome
        effect = self._effects.pop((scope.key, call_id), None)
        if isinstance(effect, TooLarge) and result.status == "success":
            path = self.policy.tool(outcome.call.name).arg("path", outcome.call.args)
            if isinstance(path, str):
                self.files.put(path, None)
        elif isinstance(effect, FileEffect) and result.status == "success":
            self.files.write(effect)
        for path, text in (files or {}).items():
            self.files.put(path, text)
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
