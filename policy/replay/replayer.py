"""Replay a recorded session (a trace) through a policy and collect its decisions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policy.model.compiled import CompiledPolicy
from policy.model.decision import ACTIONS, Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.replay.harness import EventKind, Session
from policy.replay.trace import FileEvent, ResultEvent, TraceError, TurnEvent, read_events


@dataclass(frozen=True)
class Record:
    """One decision that is not ``allow``: where in the trace it was taken, and what it says."""

    event: int
    """Line number of the trace event the decision was taken on."""
    kind: EventKind
    call: ToolCall
    decision: Decision

    def to_json(self) -> dict[str, Any]:
        d = self.decision
        return {
            "event": self.event,
            "id": self.call.id,
            "action": d.action,
            "rule": str(d.rule) if d.rule else None,
            "signature": d.signature,
            "hint": d.hint,
        }


@dataclass
class ReplayResult:
    name: str
    events: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    records: list[Record] = field(default_factory=list)
    errors: list[TraceError] = field(default_factory=list)
    skipped: int = 0
    """Events not evaluated because their run had been stopped."""

    def summary(self) -> dict[str, int]:
        return {"events": self.events, **{action: self.decisions[action] for action in ACTIONS}}

    @property
    def warned(self) -> bool:
        return self.decisions["warn"] > 0

    @property
    def blocked(self) -> bool:
        return self.decisions["block"] > 0

    @property
    def stopped(self) -> bool:
        return self.decisions["stop"] > 0


def replay_lines(policy: CompiledPolicy, lines: Iterable[str], name: str = "trace") -> ReplayResult:
    """Run the events of a trace through ``policy``; bad lines are reported and skipped."""
    report = ReplayResult(name=name)
    line_number = 0

    def listen(kind: EventKind, call: ToolCall, decision: Decision) -> None:
        report.decisions[decision.action] += 1
        if decision.action != "allow":
            report.records.append(Record(line_number, kind, call, decision))

    events = list(read_events(lines))
    snapshots = any(isinstance(event, ResultEvent) and event.files is not None for _, event in events)
    session = Session(policy, listener=listen, workspace=snapshots)
    scopes: dict[str, Scope] = {}
    for line_number, event in events:
        if isinstance(event, TraceError):
            report.errors.append(event)
            continue
        report.events += 1
        if isinstance(event, FileEvent):
            session.files.put(event.path, event.content)
        elif isinstance(event, TurnEvent):
            scope = Scope(thread_id=event.thread, run_id=event.run or "run")
            calls = [ToolCall(id=c.id, name=c.tool, args=c.args) for c in event.calls]
            scopes.update((call.id, scope) for call in calls)
            if session.is_stopped(scope):
                report.skipped += 1
                continue
            session.turn(calls, scope)
        elif isinstance(event, ResultEvent):
            result_scope = scopes.get(event.id)
            if result_scope is None:
                report.errors.append(TraceError(line_number, f"result for unknown call id {event.id!r}"))
                continue
            if session.is_stopped(result_scope):
                report.skipped += 1
                continue
            session.result(event.id, ToolResult(content=event.content, status=event.status), result_scope,
                           event.files)
    return report


def replay_file(policy: CompiledPolicy, path: Path) -> ReplayResult:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return replay_lines(policy, handle, name=path.stem)
