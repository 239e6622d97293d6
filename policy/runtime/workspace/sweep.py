"""The sweep: after a command, check the gated files it changed, and blame it for the ones it broke.

A file the command created or modified is checked by the gate its path
matches, with the gate's own validator.  It is blamed on the command (a
``hint`` on the command's result) when it fails now and passed before, or is
new.  Whether it passed before is what the guard last saw of it (its verdict
with its size and times); for a file it never saw, the text git has staged
for it, when the workspace is a git work tree; otherwise it is taken to have
passed.  A change older than the command's start (on a workspace with this
machine's clock) is not the command's: it is checked and remembered, never
blamed.  A file the command wrote as an incomplete prefix the guard read
from its text (``cat > f.py <<'EOF'`` of a first chunk) is followed up as
incomplete instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policy.model.compiled import CompiledPolicy, GateRule
from policy.model.decision import ALLOW, Decision, RuleRef
from policy.model.events import ToolCall
from policy.model.variables import HintVariables
from policy.runtime.gates.bounds import TooLarge
from policy.runtime.gates.gate import language_name, matching_gate, validator_name
from policy.runtime.gates.problems import Problem, snippet
from policy.runtime.gates.validators import validate
from policy.runtime.shipped_hints import shipped_hint
from policy.runtime.workspace.base import Workspace
from policy.runtime.workspace.progress import DELETED, content_digest, record
from policy.runtime.workspace.snapshot import Snapshot
from policy.runtime.workspace.state import CHECKED_LIMIT, WorkspaceState

CLOCK_SLACK_NS = 10_000_000
"""File times lag the clock by up to one kernel tick: a change this much before the start still counts."""
MAX_CHECKED = 32
"""Gated files checked per command; the others are named in the decision's metadata."""
MAX_SHOWN = 5
"""Broken files shown in full in one hint."""
MAX_READ = 1024
"""Changed files read per command for the progress fingerprint."""


@dataclass(frozen=True, slots=True)
class Broken:
    """A file the command left failing its gate."""

    path: str
    gate: GateRule
    problem: Problem
    text: str
    created: bool
    """The command created it (else it passed before the command)."""


@dataclass(slots=True)
class SweepResult:
    """What a sweep found among the gated files a command changed."""

    broken: list[Broken] = field(default_factory=list)
    incomplete: list[tuple[str, GateRule]] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    too_large: list[tuple[str, GateRule, str]] = field(default_factory=list)
    """Gated files the command changed that are over ``max_check_bytes``: path, gate, reason."""
    before_lost: bool = False
    """The "before" snapshot was no longer kept and file times could not stand in: nothing was checked."""


def sweep(policy: CompiledPolicy, workspace: Workspace, state: WorkspaceState, before: Snapshot | None,
          after: Snapshot, *, started_ns: int, predicted: Mapping[str, str]) -> SweepResult:
    """Check what changed from ``before`` to ``after``; update ``state`` (verdicts, fingerprint).

    ``before`` None: the snapshot from before the command is no longer kept; on a local clock the
    files changed since the command started stand for what it changed (as modified files whose
    earlier state is unknown), otherwise nothing is checked and the result says so.
    ``predicted``: path → content digest of the files the command's text said it writes.
    """
    if before is None:
        if not workspace.local_clock or not started_ns:
            return SweepResult(before_lost=True)
        before = after.with_changes_since(started_ns - CLOCK_SLACK_NS)
    changes = before.changes(after)
    result = SweepResult()
    if not changes:
        return result
    for path in changes.deleted:
        state.checked.pop(path, None)
        record(state, path, DELETED)
    unknown: list[Broken] = []
    checked = 0
    for count, path in enumerate(changes.changed):
        stat = after.stat(path)
        assert stat is not None
        gate = matching_gate(policy.gates, path) if policy.gates else None
        if gate is None or checked >= MAX_CHECKED:
            if gate is not None:
                result.unchecked.append(path)
            if count < MAX_READ:
                record(state, path, _digest(workspace, path, stat))
            continue
        checked += 1
        try:
            text = workspace.read(path)
        except TooLarge as err:
            result.too_large.append((path, gate, str(err)))
            record(state, path, _digest(workspace, path, stat))
            continue
        record(state, path, content_digest(text))
        if text is None:
            continue
        previous = state.checked.get(path)
        ours = not workspace.local_clock or max(stat[1], stat[2]) >= started_ns - CLOCK_SLACK_NS
        if gate.partial and predicted.get(path) == content_digest(text) and validate(
                gate.validator, text, path, partial=True).status == "incomplete":
            result.incomplete.append((path, gate))
            continue
        verdict = validate(gate.validator, text, path, partial=False)
        _remember(state, path, stat, verdict.problem is None)
        if verdict.problem is None or not ours:
            continue
        broken = Broken(path, gate, verdict.problem, text, path in changes.created)
        if path in changes.created:
            result.broken.append(broken)
            continue
        old = before.stat(path)
        if previous is not None and old is not None and tuple(previous[:3]) == old:
            if previous[3]:
                result.broken.append(broken)
            continue
        unknown.append(broken)
    if unknown:
        staged = workspace.staged([b.path for b in unknown])
        for broken in unknown:
            text = staged.get(broken.path)
            if text is None or validate(broken.gate.validator, text, broken.path,
                                        partial=False).problem is None:
                result.broken.append(broken)
    return result


def _digest(workspace: Workspace, path: str, stat: tuple[int, int, int]) -> str:
    """The file's content digest; for a file too large to read, one of its size and times."""
    try:
        return content_digest(workspace.read(path))
    except TooLarge:
        return content_digest("\0too large {} {} {}".format(*stat))


def _remember(state: WorkspaceState, path: str, stat: tuple[int, int, int], passed: bool) -> None:
    checked = state.checked
    checked.pop(path, None)
    checked[path] = [*stat, int(passed)]
    while len(checked) > CHECKED_LIMIT:
        del checked[next(iter(checked))]


def sweep_decision(policy: CompiledPolicy, call: ToolCall, command: str, result: SweepResult) -> Decision:
    """A ``hint`` naming every file the command broke; ALLOW when it broke none (with
    ``"checker": "unavailable"`` metadata when a file it changed was too large to check)."""
    if result.before_lost:
        return Decision(metadata={"sweep": "unchecked", "reason": "the workspace snapshot from before the "
                                  "command was no longer kept"})
    if not result.broken:
        return Decision(metadata=_too_large_facts(result)) if result.too_large else ALLOW
    hints: list[str] = []
    files: list[dict[str, Any]] = []
    rule = policy.workspace
    for broken in result.broken:
        facts = _facts(broken, command)
        files.append({key: facts[key] for key in ("path", "line", "column", "message", "validator")})
        if len(hints) < MAX_SHOWN:
            ref = RuleRef("sweep", broken.gate.ref.name, broken.gate.ref.span)
            template = rule.hint if rule is not None else None
            variables = HintVariables(policy.name, ref, "hint", call, facts)
            hints.append((template or shipped_hint("broken_by_command")).render(variables))
    if len(result.broken) > MAX_SHOWN:
        rest = ", ".join(b.path for b in result.broken[MAX_SHOWN:])
        hints.append(f"[policy] This command also left these files broken: {rest}.")
    first = result.broken[0]
    metadata: dict[str, Any] = {**files[0], "files": files}
    if result.unchecked:
        metadata["unchecked"] = list(result.unchecked)
    if result.too_large:
        metadata["too_large"] = [path for path, _, _ in result.too_large]
    return Decision(action="hint", rule=RuleRef("sweep", first.gate.ref.name, first.gate.ref.span),
                    hint="\n\n".join(hints), call_id=call.id, metadata=metadata)


def _too_large_facts(result: SweepResult) -> dict[str, Any]:
    path, gate, reason = result.too_large[0]
    return {"path": path, "gate": gate.ref.name, "validator": validator_name(gate), "checker": "unavailable",
            "reason": reason, "too_large": [path for path, _, _ in result.too_large]}


def _facts(broken: Broken, command: str) -> dict[str, Any]:
    problem = broken.problem
    return {
        "path": broken.path,
        "line": problem.line,
        "column": problem.column,
        "message": problem.message,
        "snippet": snippet(broken.text, problem.line, problem.column),
        "validator": validator_name(broken.gate),
        "language": language_name(broken.gate),
        "output": problem.output,
        "command": command,
        "created": broken.created,
    }
