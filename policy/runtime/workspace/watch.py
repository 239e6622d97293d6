"""The guard's watch over the agent's files: shell writes gated, sweeps, progress, follow-ups.

The guard calls it at each event; what it remembers lives in the scope's
``WorkspaceState`` (``state.files``), so it works with every store, except the
snapshots themselves: the state names its last one by key, and a
``SnapshotKeeper`` beside the store holds them (``policy.runtime.workspace.kept``).

- before a command: the writes its text determines (``policy.runtime.gates.shell_writes``) are
  gated like ``write_file`` calls;
- after a command: the workspace is snapshot once (the scope's previous snapshot is the
  "before"; a scope's first command takes one before it runs), and the sweep checks what changed;
- progress: with ``workspace { progress on }``, a call made progress when it brought the
  workspace's content fingerprint to a value not seen in this run;
- incomplete prefixes are remembered and followed up (``follow_up``).

The shell-write, sweep and follow-up modules are imported by the first event that needs them:
a hook process answers one event, most of which need none.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy.model.compiled import WRITING_ROLES, CompiledPolicy
from policy.model.decision import Decision
from policy.model.events import ToolCall
from policy.model.per_policy import per_policy
from policy.runtime.gates.bounds import TooLarge, check_size
from policy.runtime.gates.effects import FileEffect
from policy.runtime.gates.gate import check_effect, matching_gate, validator_name
from policy.runtime.workspace.base import Workspace
from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.kept import SnapshotKeeper
from policy.runtime.workspace.progress import advance, content_digest, record
from policy.runtime.workspace.snapshot import Snapshot
from policy.runtime.workspace.state import WorkspaceState

ReadFile = Callable[[str], "str | None"]

STARTED = "started"
PREDICTED = "predicted"
WRITTEN = "written"
NOTICE = "notice"


@dataclass(slots=True)
class CommandCheck:
    """What the gates say about a command's own writes, and what to remember until its result."""

    decision: Decision
    pending: dict[str, Any] = field(default_factory=dict)


@per_policy
def coverage_of(policy: CompiledPolicy) -> Coverage:
    """The files a snapshot covers: every gate's globs and the workspace's ``track`` globs (one
    ``Coverage`` per policy, so a workspace shared by the guards of one policy keeps its folder
    listings: a resident hook process builds a guard per event)."""
    globs = [glob for gate in policy.gates for glob in gate.globs]
    if policy.workspace is not None:
        globs.extend(policy.workspace.track)
    return Coverage(globs)


class FileWatch:
    """One policy's watch over one workspace (or none: then only shell writes and follow-ups)."""

    def __init__(self, policy: CompiledPolicy, read_file: ReadFile, workspace: Workspace | None,
                 snapshots: SnapshotKeeper) -> None:
        self.policy = policy
        self.read_file = read_file
        self.snapshots = snapshots
        rule = policy.workspace
        self.workspace = workspace if rule is not None and (rule.sweep or rule.progress) else None
        self.coverage = coverage_of(policy)
        self.sweeps = self.workspace is not None and rule is not None and rule.sweep and bool(policy.gates)
        self.progress = self.workspace is not None and rule is not None and rule.progress
        self.shell_writes = rule is not None and rule.shell_writes and bool(policy.gates)

    # --- before a call ---------------------------------------------------------

    def check_command(self, call: ToolCall, command: str) -> CommandCheck | None:
        """Gate the writes the command's text determines, in order, each on what the ones before left;
        None when it writes nothing the gates cover."""
        if not self.shell_writes:
            return None
        from policy.runtime.gates.shell_writes import shell_writes

        check = CommandCheck(Decision(call_id=call.id))
        texts: dict[str, str | None] = {}
        written: dict[str, bool] = {}
        for write in shell_writes(command):
            path = write.path
            gate = matching_gate(self.policy.gates, path)
            if gate is None:
                continue
            try:
                before = texts[path] if path in texts else self.read_file(path)
                after = (before or "") + write.text if write.append else write.text
                check_size(after, self.policy.max_check_bytes, f"what the command leaves in {path}")
            except TooLarge as err:  # not gated before it runs; the sweep sees it after
                return CommandCheck(Decision(call_id=call.id, metadata={
                    "path": path, "gate": gate.ref.name, "validator": validator_name(gate),
                    "checker": "unavailable", "reason": str(err)}))
            texts[path] = after
            if after == before:
                continue
            decision = check_effect(self.policy, gate, call, FileEffect(path, before, after), writes=True)
            if decision.action == "block":
                return CommandCheck(decision)
            written[path] = bool(decision.metadata.get("incomplete"))
        if not written:
            return None
        check.pending[WRITTEN] = written
        check.pending[PREDICTED] = {self._relative(path): content_digest(texts[path]) for path in written}
        return check

    def write_pending(self, path: str, decision: Decision) -> dict[str, Any]:
        """What an allowed write of ``path`` leaves to remember: whether it left the file an
        incomplete prefix."""
        return {WRITTEN: {path: bool(decision.metadata.get("incomplete"))}}

    def needs_snapshot(self, call: ToolCall) -> bool:
        return self.workspace is not None and self.policy.tool(call.name).role == "run"

    def snapshot(self) -> Snapshot | None:
        return self.workspace.snapshot(self.coverage) if self.workspace is not None else None

    def needs_before(self, state: WorkspaceState) -> bool:
        """Whether a command of this scope must first take the "before" snapshot: the scope has
        none yet (its first command), or the keeper no longer holds it."""
        return self.workspace is not None and (state.latest is None or not self.snapshots.has(state.latest))

    def take_before(self) -> str:
        """A snapshot of now, kept; its key (taken outside the store's lock)."""
        snapshot = self.snapshot()
        assert snapshot is not None
        return self.snapshots.put(snapshot)

    def before_run(self, state: WorkspaceState, pending: dict[str, Any], before: str | None) -> None:
        """Note when the command starts, and the "before" snapshot ``take_before`` took for it."""
        if self.workspace is None:
            return
        if before is not None and self.needs_before(state):
            state.latest = before
        pending[STARTED] = time.time_ns()

    # --- turns ---------------------------------------------------------------

    def on_turn(self, state: WorkspaceState, calls: Sequence[ToolCall],
                pending: Callable[[str], dict[str, Any]]) -> None:
        """A new batch: a file still incomplete that the batch does not go on with is followed up on
        the batch's first result (a call that names it, on that call's own)."""
        if not state.incomplete:  # usually
            return
        from policy.runtime.workspace.follow_up import touches

        for path in list(state.incomplete):
            if any(touches(self.policy, call, path) is not None for call in calls):
                continue
            entry = pending(calls[0].id)
            entry[NOTICE] = [*entry.get(NOTICE, []), path]

    # --- after a call --------------------------------------------------------

    def after_run(self) -> tuple[Snapshot, str] | None:
        """The snapshot after a command, kept, and its key (taken outside the store's lock)."""
        snapshot = self.snapshot()
        return (snapshot, self.snapshots.put(snapshot)) if snapshot is not None else None

    def on_result(self, state: WorkspaceState, call: ToolCall, pending: dict[str, Any], failed: bool,
                  after: tuple[Snapshot, str] | None) -> tuple[list[Decision], bool | None]:
        """The sweep's and the follow-up's decisions, and whether the call made progress (None: this
        watch cannot tell; the guard falls back on the call's kind).  ``after``: ``after_run``."""
        written: dict[str, bool] = pending.get(WRITTEN) or {}
        if after is None and not written and not state.incomplete and not self.progress:
            return [], None
        decisions: list[Decision] = []
        spec = self.policy.tool(call.name)
        fingerprint = state.fingerprint
        progress: bool | None = None
        if spec.role == "run" and after is not None and self.workspace is not None:
            from policy.runtime.workspace.sweep import sweep, sweep_decision

            snapshot, key = after
            before = self.snapshots.get(state.latest) if state.latest is not None else None
            result = sweep(self.policy, self.workspace, state, before, snapshot,
                           started_ns=int(pending.get(STARTED) or 0), predicted=pending.get(PREDICTED) or {})
            state.latest = key
            command = spec.arg("command", call.args)
            if self.sweeps:
                text = command if isinstance(command, str) else ""
                decisions.append(sweep_decision(self.policy, call, text, result))
            progress = advance(state, fingerprint) if self.progress else None
        elif spec.role in WRITING_ROLES and self.progress:
            progress = self._write_progress(state, call, fingerprint)
        if not failed:
            for path, incomplete in written.items():
                if incomplete:
                    state.incomplete[path] = {"call": call.id}
                else:
                    state.incomplete.pop(path, None)
        if state.incomplete:
            decisions += self._follow_ups(state, call, pending, written)
        return decisions, progress

    def _follow_ups(self, state: WorkspaceState, call: ToolCall, pending: dict[str, Any],
                    written: dict[str, bool]) -> list[Decision]:
        """The notices of the files left incomplete that this call did not go on with."""
        from policy.runtime.workspace.follow_up import notice, touches

        decisions: list[Decision] = []
        for path in list(state.incomplete):
            if path in written:
                continue
            if path in (pending.get(NOTICE) or ()) or touches(self.policy, call, path) == "other":
                del state.incomplete[path]
                try:
                    decision = notice(self.policy, call, path, self.read_file(path))
                except TooLarge:  # grown past the bound: no longer a prefix worth following up
                    continue
                if decision is not None:
                    decisions.append(decision)
        return decisions

    def _write_progress(self, state: WorkspaceState, call: ToolCall, fingerprint: int) -> bool | None:
        assert self.workspace is not None
        named = self.policy.tool(call.name).arg("path", call.args)
        path = self.workspace.relative(named) if isinstance(named, str) else None
        if path is None or not self.coverage.covers(posixpath.basename(path), path):
            return None
        try:
            text = self.workspace.read(path)
        except TooLarge:
            return None
        record(state, path, content_digest(text))
        return advance(state, fingerprint)

    def _relative(self, path: str) -> str:
        if self.workspace is None:
            return path
        return self.workspace.relative(path) or path

