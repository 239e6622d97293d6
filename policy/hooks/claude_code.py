"""The Claude Code command-hook protocol: one event in (JSON on stdin), one answer out.

Events and what they do:

- ``PreToolUse``: the call is a turn of one (loop layers), then the write
  gates.  A block answers ``permissionDecision: "deny"`` with the hint as the
  reason Claude reads; a stop also ends the turn (``"continue": false``).
  Nothing is answered for an allowed call, so Claude Code's own permission
  rules still apply.
- ``PostToolUse`` / ``PostToolUseFailure``: the result (signatures, error
  streaks, oscillation, and any warning the turn left pending) comes back as
  ``additionalContext``; a stop also ends the turn.
- ``UserPromptSubmit``: a new user prompt starts a new run, so the session's
  loop budget starts afresh.

One Claude Code session is one thread whose state lives in a ``Store`` that
outlives the hook process (``policy.stores.file.FileStore``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policy.hooks.delivery import decision_text
from policy.model.decision import Decision
from policy.model.events import Scope, ToolCall, ToolResult
from policy.runtime.gates import read_local_file
from policy.runtime.guard import Guard

DEFAULT_POLICY = "builtin:claude-code"
SESSION_RUN = "session"
"""The run id of a session's scope: the session's current user prompt."""
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
EVENTS = (*TOOL_EVENTS, "UserPromptSubmit")


class HookEventError(ValueError):
    """A hook event that cannot be read; the message says what is wrong with it."""


@dataclass(frozen=True)
class HookEvent:
    """One event, checked.  ``call`` is None for ``UserPromptSubmit``; ``result`` is set after a tool ran."""

    name: str
    session_id: str
    cwd: Path
    call: ToolCall | None = None
    result: ToolResult | None = None

    @property
    def scope(self) -> Scope:
        return Scope(thread_id=self.session_id, run_id=SESSION_RUN)


def parse_event(text: str) -> HookEvent:
    """Read one event; raise ``HookEventError`` naming the first problem."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise HookEventError(f"the event is not JSON ({err})") from None
    except RecursionError:
        raise HookEventError("the event nests lists or objects too deeply to read") from None
    if not isinstance(data, dict):
        raise HookEventError("the event must be a JSON object")
    name = _text(data, "hook_event_name")
    if name not in EVENTS:
        raise HookEventError(f"unsupported hook_event_name {name!r} (expected one of {', '.join(EVENTS)})")
    session_id = _text(data, "session_id")
    cwd = Path(data["cwd"]) if isinstance(data.get("cwd"), str) and data["cwd"] else Path.cwd()
    if name not in TOOL_EVENTS:
        return HookEvent(name=name, session_id=session_id, cwd=cwd)
    tool_name = _text(data, "tool_name")
    tool_input = data.get("tool_input", {})
    if not isinstance(tool_input, dict):
        raise HookEventError("tool_input must be a JSON object")
    call = ToolCall(id=_call_id(data, tool_name, tool_input), name=tool_name, args=tool_input)
    result = None
    if name == "PostToolUse":
        result = _response_result(data.get("tool_response"))
    elif name == "PostToolUseFailure":
        error = data.get("error")
        result = ToolResult(content=error if isinstance(error, str) else _as_text(error), status="error")
    return HookEvent(name=name, session_id=session_id, cwd=cwd, call=call, result=result)


def answer(guard: Guard, event: HookEvent) -> dict[str, Any] | None:
    """The JSON answer to print for ``event``; None when the hook has nothing to say."""
    if event.call is None:
        guard.reset(event.session_id)
        return None
    if event.result is None:
        turn = guard.on_turn([event.call], event.scope)
        decision = turn if turn.action == "stop" else guard.on_call(event.call, event.scope)
        if decision.action not in ("block", "stop"):
            return None
        reply = _specific(event.name, permissionDecision="deny",
                          permissionDecisionReason=decision_text(decision))
    else:
        decision = guard.on_result(event.call, event.result, event.scope)
        if decision.action == "allow":
            return None
        reply = _specific(event.name, additionalContext=decision_text(decision))
    if decision.action == "stop":
        reply.update({"continue": False, "stopReason": _stop_summary(decision)})
    return reply


def file_reader(cwd: Path) -> Callable[[str], str | None]:
    """The write gates' reader: Claude Code's real files, relative paths taken from the event's cwd."""

    def read(path: str) -> str | None:
        return read_local_file(str(cwd / path))

    return read


def _specific(event_name: str, **fields: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event_name, **fields}}


def _stop_summary(decision: Decision) -> str:
    """``stopReason``: shown to the user, one line."""
    first_line = next((line.strip() for line in decision_text(decision).splitlines() if line.strip()), "")
    rule = f" ({decision.rule})" if decision.rule else ""
    return f"policyctl stopped the agent{rule}: {first_line}"


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise HookEventError(f"{key} is missing or not a non-empty string")
    return value


def _call_id(data: Mapping[str, Any], tool_name: str, tool_input: dict[str, Any]) -> str:
    """``tool_use_id``; without one, an id derived from the call so its Pre and Post events agree."""
    value = data.get("tool_use_id")
    if isinstance(value, str) and value:
        return value
    digest = hashlib.sha256(json.dumps([tool_name, tool_input], sort_keys=True, default=str).encode())
    return f"call-{digest.hexdigest()[:16]}"


def _response_result(response: Any) -> ToolResult:
    """A tool's ``tool_response`` as the result the policy reads (Bash: its stdout and stderr)."""
    if isinstance(response, dict) and ("stdout" in response or "stderr" in response):
        parts = [response.get("stdout"), response.get("stderr")]
        content = "\n".join(part for part in parts if isinstance(part, str) and part)
        interrupted = response.get("interrupted") is True
        return ToolResult(content=content, status="error" if interrupted else "success")
    return ToolResult(content=_as_text(response))


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in value):
        return "\n".join(str(block.get("text", "")) for block in value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
