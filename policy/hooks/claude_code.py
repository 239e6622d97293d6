"""The Claude Code command-hook protocol: one event in (JSON on stdin), one answer out.

Events and what they do (Claude Code's hooks reference lists the fields):

- ``PreToolUse``: the call is a turn of one (loop layers), then the write
  gates.  A block answers ``permissionDecision: "deny"`` with the hint as the
  reason Claude reads; a stop also ends the turn (``"continue": false``).
  Nothing is answered for an allowed call, so Claude Code's own permission
  rules still apply.
- ``PostToolUse`` / ``PostToolUseFailure``: the result (signatures, error
  streaks, oscillation, and any warning the turn left pending) comes back as
  ``additionalContext``; a stop also ends the turn.  A call the user
  interrupted (``is_interrupt``, or Bash's ``interrupted``) is no failure and
  is not counted.
- ``UserPromptSubmit``: a new user prompt starts a new run, so the session's
  loop budget starts afresh.  When events carry ``prompt_id``, each prompt is
  its own run anyway.
- ``SessionEnd``: the session's state is dropped.
- Every other event (``Stop``, ``SessionStart``, ``Notification``… and any
  new one) is accepted and answered with nothing.

One Claude Code session is one thread; each subagent (``agent_id``) is a
thread of its own, so it has its own loop budget.  State lives in a ``Store``
that outlives the hook process (``policy.stores.file.FileStore``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from policy.hooks.delivery import decision_text
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.gates import read_local_file
from policy.runtime.guard import Guard

DEFAULT_POLICY = "builtin:claude-code"
SESSION_RUN = "session"
"""The run id of a session's scope when events carry no ``prompt_id``: the session's current prompt."""
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
INTERNAL_ERROR = "internal_error"
"""The decision metadata key of a guard fault (``policy.runtime.guard``)."""


class HookEventError(ValueError):
    """A hook event that cannot be read; the message says what is wrong with it."""


class HookEvent(NamedTuple):
    """One event, checked.  ``call`` is set for tool events; ``result`` once the tool ran.
    (A named tuple: every hook process defines it, and a dataclass costs far more to define.)"""

    name: str
    session_id: str
    cwd: Path | None
    """The project folder; None when the event names none (then there is no workspace, and
    relative paths are not read)."""
    prompt_id: str | None = None
    agent_id: str | None = None
    call: ToolCall | None = None
    result: ToolResult | None = None
    interrupted: bool = False
    """The user interrupted the tool: the result is neither a success nor a failure."""

    @property
    def thread_id(self) -> str:
        """The session's thread, or the subagent's own thread inside it."""
        return self.session_id if self.agent_id is None else f"{self.session_id}.agent-{self.agent_id}"

    @property
    def scope(self) -> Scope:
        return Scope(thread_id=self.thread_id, run_id=self.prompt_id or SESSION_RUN)


def parse_event(text: str) -> HookEvent:
    """Read one event; raise ``HookEventError`` naming the first problem."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        reason = "it is nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise HookEventError(f"the event is not JSON ({reason})") from None
    if not isinstance(data, dict):
        raise HookEventError("the event must be a JSON object")
    name = _text(data, "hook_event_name")
    session_id = _text(data, "session_id")
    cwd = data.get("cwd")
    cwd = Path(cwd) if isinstance(cwd, str) and os.path.isabs(cwd) else None
    common: dict[str, Any] = {"name": name, "session_id": session_id, "cwd": cwd,
                              "prompt_id": _optional_text(data, "prompt_id"),
                              "agent_id": _optional_text(data, "agent_id")}
    if name not in TOOL_EVENTS:
        return HookEvent(**common)
    tool_name = _text(data, "tool_name")
    tool_input = data.get("tool_input", {})
    if not isinstance(tool_input, dict):
        raise HookEventError("tool_input must be a JSON object")
    call = ToolCall(id=_call_id(data, tool_name, tool_input), name=tool_name, args=tool_input)
    result, interrupted = None, False
    if name == "PostToolUse":
        result, interrupted = _response_result(data.get("tool_response"))
    elif name == "PostToolUseFailure":
        error = data.get("error")
        result = ToolResult(content=error if isinstance(error, str) else _as_text(error), status="error")
        interrupted = data.get("is_interrupt") is True
    return HookEvent(**common, call=call, result=result, interrupted=interrupted)


def answer(guard: Guard, event: HookEvent) -> dict[str, Any] | None:
    """The JSON answer to print for ``event``; None when the hook has nothing to say."""
    if event.call is None:
        if event.name in ("UserPromptSubmit", "SessionEnd"):
            guard.reset(event.thread_id)
        return None
    if event.interrupted:
        return None
    if event.result is None:
        turn = guard.on_turn([event.call], event.scope)
        decision = turn if turn.action == "stop" else guard.on_call(event.call, event.scope)
        reply = _fault_reply(decision, event)
        if decision.action not in ("block", "stop"):
            return reply or None
        reply.update(_specific(event.name, permissionDecision="deny",
                               permissionDecisionReason=decision_text(decision)))
    else:
        decision = guard.on_result(event.call, event.result, event.scope)
        reply = _fault_reply(decision, event)
        if decision.action == "allow":
            return reply or None
        reply.update(_specific(event.name, additionalContext=decision_text(decision)))
    if decision.action == "stop":
        reply.update({"continue": False, "stopReason": stop_summary(decision)})
    return reply or None


def fault_message(decision: Decision) -> str | None:
    """What to tell the user when ``decision`` let a call through unchecked: a guard fault, a loop
    state that could not be used or had to start afresh, or a gate that could not run (a text over
    ``max_check_bytes``, a missing checker).  None: it was checked."""
    fault = decision.metadata.get(INTERNAL_ERROR)
    if fault is not None:
        return f"policyctl could not check this call ({fault}); it was not guarded."
    loop_state = decision.metadata.get("loop_state")
    if loop_state == "unavailable":  # a store fault: the gates still ran
        reason = decision.metadata.get("loop_state_reason")
        return f"policyctl could not use its loop state ({reason}); loops were not guarded for this call."
    if loop_state == "reset":  # the store had to start the state afresh: earlier calls no longer count
        reason = decision.metadata.get("loop_state_reason")
        return f"policyctl lost its loop state: {reason}; the calls before this one no longer count."
    if decision.metadata.get("checker") == "unavailable":
        gate = decision.metadata.get("gate", "write")
        return f"policyctl's {gate} gate did not check this call: {decision.metadata.get('reason')}."
    return None


def file_reader(cwd: Path | None, limit: int) -> Callable[[str], str | None]:
    """The write gates' reader: Claude Code's real files, relative paths taken from the event's cwd
    (not read without one), at most ``limit`` bytes (the policy's ``max_check_bytes``)."""

    def read(path: str) -> str | None:
        if cwd is None and not os.path.isabs(path):
            return None
        return read_local_file(str(cwd / path) if cwd is not None else path, limit)

    return read


def stop_summary(decision: Decision) -> str:
    """``stopReason``, shown to the user: one whole sentence saying who stopped the agent and why."""
    first_line = next((line.strip() for line in decision_text(decision).splitlines() if line.strip()), "")
    if first_line.startswith("["):
        first_line = first_line.partition("]")[2].strip()
    sentence = first_line.rstrip(" :;,")
    if sentence and sentence[-1] not in ".!?":
        sentence += "."
    rule = f" by {decision.rule}" if decision.rule else ""
    lead = f"policyctl stopped the agent{rule}."
    return f"{lead} {sentence}" if sentence else lead


def _fault_reply(decision: Decision, event: HookEvent) -> dict[str, Any]:
    message = fault_message(decision)
    if message is None:
        return {}
    tool = f" {event.call.name}" if event.call is not None else ""
    return {"systemMessage": f"{event.name}{tool}: {message}"}


def _specific(event_name: str, **fields: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event_name, **fields}}


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise HookEventError(f"{key} is missing or not a non-empty string")
    return value


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def _call_id(data: Mapping[str, Any], tool_name: str, tool_input: dict[str, Any]) -> str:
    """``tool_use_id``; without one, an id derived from the call so its Pre and Post events agree."""
    value = data.get("tool_use_id")
    if isinstance(value, str) and value:
        return value
    text = json.dumps([tool_name, tool_input], sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass"))
    return f"call-{digest.hexdigest()[:16]}"


def _response_result(response: Any) -> tuple[ToolResult, bool]:
    """A tool's ``tool_response`` as the result the policy reads (Bash: its stdout and stderr),
    and whether the user interrupted it."""
    if isinstance(response, dict) and ("stdout" in response or "stderr" in response):
        parts = [response.get("stdout"), response.get("stderr")]
        content = "\n".join(part for part in parts if isinstance(part, str) and part)
        return ToolResult(content=content), response.get("interrupted") is True
    return ToolResult(content=_as_text(response)), False


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in value):
        return "\n".join(str(block.get("text", "")) for block in value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
