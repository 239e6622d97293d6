"""The guard: a compiled policy applied to one harness's events, with state per scope.

A harness reports three events per scope (docs/design.md, "Events and decisions"):
``on_turn`` when the model answers with a batch of calls (loop layers repeat
and frequency), ``on_call`` before one call executes (write gates) and
``on_result`` after it returns (signatures, error streaks, oscillation).

Delivery (the policy's ``deliver_warnings``): with ``tool_message`` (the
default) a warning decided for a turn waits, keyed by scope and call id, and
is folded into the decision for that call's result (or into its block), so
it reaches the model inside that call's ToolMessage.  With ``next_request``
every loop warning (of a turn or of a result) is queued for the scope
instead and handed out by ``take_warnings`` when the harness builds the next
model request; the call's own decision then carries no warning.  Either way
a turn's warning is rendered only when it is delivered.

Every method is thread-safe: state is only touched inside
``Store.scope()``, which gives exclusive access to one scope (a model turn
in memory: under the lock ``MemoryStore.checkout`` gives with the state).  The
in-memory path is pure computation (microseconds) and safe to call from an
event loop; the ``a*`` twins run the work in a thread for stores that do I/O
(Redis, files) and for command checkers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from policy.model.compiled import WRITING_ROLES, CompiledPolicy
from policy.model.decision import ALLOW, COMBINED, Decision, RuleRef
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.faults import TOO_DEEP_FACTS, GuardedStore, Stored, too_deep
from policy.runtime.gates import (
    FileEffect,
    bounded_effect,
    check_write,
    gate_applies,
    read_local_file,
    unread_effect,
)
from policy.runtime.loops.detector import LoopDetector
from policy.runtime.loops.layer import ErrorKey
from policy.runtime.loops.state import MAX_OPEN_CALLS, ScopeState, drop_oldest
from policy.runtime.output import Output, output_reader
from policy.runtime.workspace.base import Workspace
from policy.runtime.workspace.kept import MemorySnapshots, SnapshotKeeper
from policy.runtime.workspace.progress import command_mutates
from policy.runtime.workspace.watch import FileWatch
from policy.stores.memory import MemoryStore, Store

if TYPE_CHECKING:  # signatures are imported by the first result (a hook process may answer only a call)
    from policy.runtime.signatures import Diagnosis

log = logging.getLogger("policy.guard")
_T = TypeVar("_T")

ReadFile = Callable[[str], "str | None"]

_INTERNAL = RuleRef("internal", "error")
_WARNING = "warning"
_CHANGES_FILE = "changes_file"
_WRITES = "writes"
MAX_QUEUED = 4
"""Warnings a scope keeps for its next model request (DeerFlow's cap); the oldest go first."""


class Guard:
    """Evaluates events against one compiled policy.  Build one per policy and share it."""

    def __init__(
        self,
        policy: CompiledPolicy | str | os.PathLike[str] = "builtin:default",
        *,
        read_file: ReadFile | None = None,
        store: Store | None = None,
        workspace: Workspace | str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(policy, CompiledPolicy):
            from policy.language.loader import load_policy  # the language stack, only when asked to compile

            policy = load_policy(policy)
        self.policy = policy
        self.workspace: Workspace | None = _local(workspace, self.policy)
        """The files the agent works on (``workspace { … }`` in the policy says what is done with them)."""
        self.read_file: ReadFile = read_file or _workspace_reader(self.workspace, self.policy.max_check_bytes)
        self.store: Store = store if store is not None else MemoryStore(self.policy.max_scopes)
        self._state = GuardedStore(self.store, self.policy.name)
        self._loops = LoopDetector(self.policy)
        self._outputs = output_reader(self.policy)
        self._queues = self.policy.deliver_warnings == "next_request"
        self._files = FileWatch(self.policy, self.read_file, self.workspace, _snapshots(self.store))

    # --- events -------------------------------------------------------------

    def on_turn(self, calls: Sequence[ToolCall], scope: Scope) -> Decision:
        """Loop layers over a batch.  ``stop``: end the run; ``warn`` (without its text, see
        ``render``): delivered with that call's result, or by ``take_warnings``."""
        try:  # inline rather than through ``_guarded``: this runs on every model turn
            if not calls:
                return ALLOW
            if len(calls) == 1:  # the common batch: no list to build
                readable = calls if not too_deep(calls[0]) else ()
            else:
                readable = [call for call in calls if not too_deep(call)]
            if not readable:
                return Decision(metadata=TOO_DEEP_FACTS)

            memory = self._state.memory
            if memory is not None:  # straight to the store that cannot fault, inline: every turn
                lock, state = memory.checkout(scope)
                with lock:
                    decision = self._loops.on_turn(state, readable, render=False)
                    if decision.action == "warn" or state.files.incomplete:  # else nothing to keep
                        decision = self._kept(state, decision, readable)
            else:
                decision = _settled(self._state.run(scope, lambda state: self._kept(
                    state, self._loops.on_turn(state, readable, render=False), readable)), ALLOW)
            return decision if len(readable) == len(calls) else _with_facts(decision, TOO_DEEP_FACTS)
        except Exception as err:
            return self._fault("turn", err)

    def on_call(self, call: ToolCall, scope: Scope) -> Decision:
        """Write gates.  ``block``: do not execute the call; send the hint as an error ToolMessage."""
        return self._guarded("call", lambda: self._on_call(call, scope))

    def on_result(self, call: ToolCall, result: ToolResult, scope: Scope) -> Decision:
        """Signatures, error streaks, oscillation, plus any warning pending for this call."""
        return self._guarded("result", lambda: self._on_result(call, result, scope))

    def render(self, decision: Decision, call: ToolCall) -> Decision:
        """A turn's warning (which comes without its text) with its hint, for a harness that shows
        it before delivery; any other decision as it is."""
        if decision.hint is not None or decision.rule is None or decision.rule.kind != "loop":
            return decision
        return self._loops.render(decision, call)

    def take_warnings(self, scope: Scope) -> list[Decision]:
        """The warnings queued for the scope's next model request, rendered, one per distinct
        text; the queue is emptied (``deliver_warnings next_request``; empty with ``tool_message``)."""
        try:
            with self.store.existing(scope) as state:  # a run that counted no call has nothing queued
                if state is None or not state.queued:
                    return []
                queued, state.queued = state.queued, []
            decisions: dict[str, Decision] = {}
            for entry in queued:
                decision = self._restore(entry)
                decisions.setdefault((decision.hint or "").strip(), decision)
            return list(decisions.values())
        except Exception:
            log.exception("policy %s: could not take the queued warnings of %s", self.policy.name, scope.key)
            return []

    def clear_pending(self, scope: Scope) -> None:
        """Drop this scope's undelivered warnings (never its loop history, never another scope's)."""
        try:
            with self.store.existing(scope) as state:
                if state is not None:
                    state.pending.clear()
                    state.queued.clear()
        except Exception:  # a store fault must not break the agent's shutdown path
            log.exception("policy %s: could not clear pending warnings of %s", self.policy.name, scope.key)

    def reset(self, thread_id: str | None = None) -> None:
        """Forget every run scope of a thread; with no thread, of every thread."""
        try:
            if thread_id is None:
                self.store.drop_all()
            else:
                self.store.drop_thread(thread_id)
        except Exception:
            log.exception("policy %s: could not reset thread %s", self.policy.name, thread_id)

    async def aon_turn(self, calls: Sequence[ToolCall], scope: Scope) -> Decision:
        return await _to_thread(self.on_turn, calls, scope)

    async def aon_call(self, call: ToolCall, scope: Scope) -> Decision:
        return await _to_thread(self.on_call, call, scope)

    async def aon_result(self, call: ToolCall, result: ToolResult, scope: Scope) -> Decision:
        return await _to_thread(self.on_result, call, result, scope)

    async def atake_warnings(self, scope: Scope) -> list[Decision]:
        return await _to_thread(self.take_warnings, scope)

    async def aclear_pending(self, scope: Scope) -> None:
        await _to_thread(self.clear_pending, scope)

    async def areset(self, thread_id: str | None = None) -> None:
        await _to_thread(self.reset, thread_id)

    # --- implementation -----------------------------------------------------

    def _kept(self, state: ScopeState, decision: Decision, calls: Sequence[ToolCall]) -> Decision:
        """A turn's decision, once what it leaves in the scope's state is kept: its warning,
        unrendered, for its delivery (queued for the next model request, or pending for its
        call's result) as the decision, its rule as stored and the call it concerns (a loop
        decision has no signature or captures, and its metadata is its own fresh dict); the
        files the turn may complete (files left incomplete: rare)."""
        if decision.action == "warn" and decision.call_id is not None:
            call = calls[0] if len(calls) == 1 else next(c for c in calls if c.id == decision.call_id)
            rule = decision.rule
            entry = {"action": decision.action,
                     "rule": None if rule is None else self._loops.stored_rules[rule.name],
                     "call_id": decision.call_id, "metadata": decision.metadata, "tool": call.name,
                     "args": call.args}
            if self._queues:
                _queue(state, entry)
            else:
                _pending(state, call.id)[_WARNING] = entry
        if decision.action != "stop" and state.files.incomplete:
            self._files.on_turn(state.files, calls, lambda call_id: _pending(state, call_id))
        return decision

    def _on_call(self, call: ToolCall, scope: Scope) -> Decision:
        """The gate's verdict first, from the call alone; the store only adds loop counting to it."""
        spec = self.policy.tool(call.name)
        if spec.role == "run":
            return self._on_command(call, scope)
        if spec.role not in WRITING_ROLES:
            return ALLOW
        if not gate_applies(self.policy, spec, call.args):
            return self._on_unchecked_write(call, scope)
        effect = bounded_effect(spec, call.args, self.read_file, self.policy.max_check_bytes)
        if effect is None:
            return ALLOW
        decision = check_write(self.policy, call, self.read_file, effect)
        if too_deep(call):
            return _with_facts(decision, TOO_DEEP_FACTS)
        changes_file = effect.changes_file if isinstance(effect, FileEffect) else None

        def work(state: ScopeState) -> Decision:
            entry = _pending(state, call.id)
            entry[_CHANGES_FILE] = changes_file
            if decision.action != "block":
                if isinstance(effect, FileEffect):
                    entry.update(self._files.write_pending(effect.path, decision))
                return decision
            return self._blocked(state, call, decision)

        return self._keeping("call", decision, lambda: _settled(self._state.run(scope, work), decision))

    def _on_unchecked_write(self, call: ToolCall, scope: Scope) -> Decision:
        """A write no gate checks: its file is not read; whether it changes the file (progress, for
        the loop layers) is judged from its arguments (``UnreadEffect``)."""
        effect = unread_effect(self.policy.tool(call.name), call.args)
        if effect is None or too_deep(call):
            return ALLOW
        decision = Decision(call_id=call.id)

        def work(state: ScopeState) -> Decision:
            entry = _pending(state, call.id)
            changes = effect.changes
            if effect.digest is not None:
                changes = state.written.get(effect.path) != effect.digest
                entry[_WRITES] = [effect.path, effect.digest]
            entry[_CHANGES_FILE] = changes
            entry.update(self._files.write_pending(effect.path, decision))
            return decision

        return self._keeping("call", decision, lambda: _settled(self._state.run(scope, work), decision))

    def _on_command(self, call: ToolCall, scope: Scope) -> Decision:
        """A command's own writes gated; the workspace noted before it runs."""
        command = self.policy.tool(call.name).arg("command", call.args)
        check = self._files.check_command(call, command) if isinstance(command, str) else None
        if (check is None and not self._files.needs_snapshot(call)) or too_deep(call):
            return check.decision if check is not None else ALLOW
        decision = check.decision if check is not None else ALLOW
        before: list[str] = []
        """The scope's first "before" snapshot, when it needs one: taken outside the store's lock."""

        def work(state: ScopeState) -> Decision | None:
            if decision.action == "block":
                return self._blocked(state, call, decision)
            if not before and self._files.needs_before(state.files):
                return None
            entry = _pending(state, call.id)
            if check is not None:
                entry.update(check.pending)
            self._files.before_run(state.files, entry, before[0] if before else None)
            return decision

        def noted() -> Decision:
            stored = self._state.run(scope, work)
            if not stored.failed and stored.value is None:
                before.append(self._files.take_before())
                stored = self._state.run(scope, work)
            return _settled(stored, decision)

        return self._keeping("call", decision, noted)

    def _blocked(self, state: ScopeState, call: ToolCall, decision: Decision) -> Decision:
        """A blocked call is a failed result for the error streak; its pending warning goes with it."""
        rejection = ToolResult(content=decision.hint or "", status="error")
        error_key = ErrorKey.of_block(decision.rule.name if decision.rule else "",
                                      str(decision.metadata.get("path", "")),
                                      str(decision.metadata.get("message", "")))
        streak = self._delivered(state, self._loops.on_result(
            state, call, rejection, failed=True, error_key=error_key, state_changed=False))
        warning = state.pending.pop(call.id, {}).get(_WARNING)
        return _combine([decision, streak, self._restore(warning)])

    def _on_result(self, call: ToolCall, result: ToolResult, scope: Scope) -> Decision:
        """The signature hint first, from the result alone; the store adds loops and pending warnings."""
        from policy.runtime.signatures import diagnose, hint_decision

        output = self._outputs.read(result.content)
        diagnosis = diagnose(self.policy, call, result, output)
        signature = hint_decision(self.policy, call, result, diagnosis, self.read_file)
        if too_deep(call):
            return _with_facts(signature, TOO_DEEP_FACTS)
        return self._keeping("result", signature,
                             lambda: self._counted(call, result, scope, (output, diagnosis), signature))

    def _counted(self, call: ToolCall, result: ToolResult, scope: Scope, read: tuple[Output, Diagnosis],
                 signature: Decision) -> Decision:
        """A result's loop counting, pending warnings and the file watch, added to its signature hint."""
        output, diagnosis = read
        after = self._files.after_run() if self._files.needs_snapshot(call) else None

        def work(state: ScopeState) -> Decision:
            pending = state.pending.pop(call.id, {})
            try:
                files, progress = self._files.on_result(state.files, call, pending, diagnosis.failed, after)
            except Exception as err:  # the file watch's fault costs only its own findings
                files, progress = [Decision(metadata=self._fault_facts("result", err))], None
            changed = progress if progress is not None else self._state_changed(
                call, diagnosis.failed, pending.get(_CHANGES_FILE))
            _remember_write(state, self.policy.tool(call.name).role, pending.get(_WRITES),
                            diagnosis.failed, changed)
            loops = self._delivered(state, self._loops.on_result(
                state, call, result, failed=diagnosis.failed, error_key=diagnosis.key, state_changed=changed,
                output=output))
            combined = _combine([self._restore(pending.get(_WARNING)), loops, signature, *files])
            return _with_facts(combined, {key: value for decision in files if decision.action == "allow"
                                          for key, value in decision.metadata.items()})

        return _settled(self._state.run(scope, work), signature)

    def _delivered(self, state: ScopeState, decision: Decision) -> Decision:
        """A result's loop decision for its call; a warning goes to the queue under ``next_request``."""
        if decision.action == "warn" and self._queues:
            _queue(state, decision.to_state())
            return ALLOW
        return decision

    def _restore(self, data: dict[str, Any] | None) -> Decision:
        """A stored warning back as a decision, rendered now if it was stored without its text."""
        if not data:
            return ALLOW
        decision = Decision.from_state(data)
        if decision.hint is None and "tool" in data:
            call = ToolCall(id=decision.call_id or "", name=data["tool"], args=data.get("args") or {})
            decision = self._loops.render(decision, call)
        return decision

    def _state_changed(self, call: ToolCall, failed: bool, changes_file: Any) -> bool:
        """Did this call change the sandbox?  A failed call, or a write of identical content, did not."""
        if failed:
            return False
        spec = self.policy.tool(call.name)
        if spec.role in WRITING_ROLES:
            return changes_file is not False
        if spec.role == "run":
            command = spec.arg("command", call.args)
            return isinstance(command, str) and command_mutates(spec, command)
        return False

    def _guarded(self, event: str, evaluate: Callable[[], Decision]) -> Decision:
        """A guard fault never breaks the agent: log it and apply ``on_internal_error``."""
        try:
            return evaluate()
        except Exception as err:
            return self._fault(event, err)

    def _keeping(self, event: str, decided: Decision, evaluate: Callable[[], Decision]) -> Decision:
        """``evaluate()``; a fault in it keeps ``decided`` (the gate's verdict or the signature hint,
        computed before), with the fault in its metadata."""
        try:
            return evaluate()
        except Exception as err:
            return _with_facts(decided, self._fault_facts(event, err))

    def _fault_facts(self, event: str, err: Exception) -> dict[str, Any]:
        log.exception("policy %s: internal error during %s", self.policy.name, event)
        return {"internal_error": f"{type(err).__name__}: {err}"}

    def _fault(self, event: str, err: Exception) -> Decision:
        fault = self._fault_facts(event, err)
        if self.policy.on_internal_error == "block" and event == "call":
            hint = f"[policy] internal error ({type(err).__name__}); the call was not checked."
            return Decision(action="block", rule=_INTERNAL, hint=hint, metadata=fault)
        return Decision(action="allow", rule=_INTERNAL, metadata=fault)


def _remember_write(state: ScopeState, role: str, writes: Any, failed: bool, changed: bool) -> None:
    """Keep what an unchecked write left in its file; a command that changed files forgets it all
    (the files may hold anything now)."""
    if role == "run" and changed:
        state.written.clear()
    elif not failed and isinstance(writes, list) and len(writes) == 2:
        path, digest = writes
        state.written.pop(str(path), None)
        state.written[str(path)] = str(digest)
        drop_oldest(state.written, MAX_OPEN_CALLS)


def _local(workspace: Workspace | str | os.PathLike[str] | None, policy: CompiledPolicy) -> Workspace | None:
    """A root folder as a ``LocalWorkspace`` bounded by the policy's ``max_files`` and ``max_check_bytes``."""
    if not isinstance(workspace, str | os.PathLike):
        return workspace
    from policy.runtime.workspace.local import DEFAULT_MAX_FILES, LocalWorkspace

    rule = policy.workspace
    return LocalWorkspace(workspace, max_files=rule.max_files if rule is not None else DEFAULT_MAX_FILES,
                          max_bytes=policy.max_check_bytes)


def _workspace_reader(workspace: Workspace | None, limit: int) -> ReadFile:
    """The write gates' reader: the workspace's files (relative paths from its root), else the disk."""
    if workspace is None:
        return lambda path: read_local_file(path, limit)
    from policy.runtime.workspace.local import LocalWorkspace  # imported by a guard given a workspace

    if isinstance(workspace, LocalWorkspace):
        root = workspace.root
        return lambda path: read_local_file(os.path.join(root, path), limit)
    reader = workspace

    def read(path: str) -> str | None:
        relative = reader.relative(path)
        return reader.read(relative) if relative is not None else None

    return read


def _with_facts(decision: Decision, facts: dict[str, Any]) -> Decision:
    """The decision with ``facts`` added to its metadata (an allow keeps its call id and rule)."""
    return decision._replace(metadata={**decision.metadata, **facts}) if facts else decision


def _settled(stored: Stored[Decision] | Stored[Decision | None], fallback: Decision) -> Decision:
    """The event's decision: what the work decided (``fallback`` when the store failed before it
    could), with what the metadata must say about the store."""
    return _with_facts(stored.value if stored.value is not None else fallback, stored.facts)


def _snapshots(store: Store) -> SnapshotKeeper:
    """Where the workspace snapshots go: beside the store when it keeps them (``snapshots()``: the
    file store's folder, Redis), else in this guard's memory."""
    keeper = getattr(store, "snapshots", None)
    return keeper() if callable(keeper) else MemorySnapshots()


def _pending(state: ScopeState, call_id: str) -> dict[str, Any]:
    """What waits for this call's result; the oldest calls' entries go first (their results
    may never come) once ``MAX_OPEN_CALLS`` calls have some."""
    entry = state.pending.setdefault(call_id, {})
    drop_oldest(state.pending, MAX_OPEN_CALLS)
    return entry


def _queue(state: ScopeState, data: dict[str, Any]) -> None:
    """Queue a warning for the scope's next model request, keeping the newest ``MAX_QUEUED``."""
    state.queued.append(data)
    del state.queued[:-MAX_QUEUED]


def _combine(decisions: list[Decision]) -> Decision:
    """One decision for one call: the most severe leads; every hint is kept, most severe first.

    A stop supersedes warnings: "the run is stopped" is not followed by "at 5 it stops".
    """
    fired = [d for d in decisions if d.action != "allow"]
    if any(d.action == "stop" for d in fired):
        fired = [d for d in fired if d.action != "warn"]
    if not fired:
        return ALLOW
    ordered = sorted(fired, key=lambda d: -d.severity)
    lead = ordered[0]
    if len(ordered) == 1:
        return lead
    hints = [d.hint for d in ordered if d.hint]
    signature = next((d for d in ordered if d.signature), None)
    metadata = dict(lead.metadata)
    metadata[COMBINED] = tuple(ordered)
    return Decision(
        action=lead.action,
        rule=lead.rule,
        hint="\n\n".join(hints) if hints else None,
        call_id=lead.call_id,
        signature=signature.signature if signature else None,
        captures=signature.captures if signature else {},
        metadata=metadata,
    )


async def _to_thread(function: Callable[..., _T], *args: Any) -> _T:
    """``asyncio.to_thread``, with asyncio imported on first use (hook processes never need it)."""
    import asyncio

    return await asyncio.to_thread(function, *args)
