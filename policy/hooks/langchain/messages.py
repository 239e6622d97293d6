"""How decisions reach the model in LangChain messages.

Every function returns a new message and leaves its argument untouched.

- a ``stop`` ends the run: the AI message loses its tool calls and gains the
  stop text, so the agent loop finishes with a final answer;
- a ``block`` becomes an error ``ToolMessage`` for the call that did not run;
- a hint or warning is appended to the call's own ``ToolMessage`` after a
  blank line.

Structured facts ride along in ``additional_kwargs["policy"]``, and in
DeerFlow's ``deerflow_tool_meta`` so DeerFlow's own middlewares read them.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from policy.hooks.delivery import decision_text
from policy.model.decision import ALLOW, Decision
from policy.model.events import ToolCall

POLICY_KEY = "policy"
DEERFLOW_META_KEY = "deerflow_tool_meta"

_TOOL_CALL_BLOCK_TYPES = frozenset(
    {"tool_use", "tool_call", "tool_call_chunk", "function_call", "server_tool_use"})
"""Content blocks that carry a tool call (Anthropic ``tool_use``, LangChain's standard ``tool_call``)."""

_NEXT_ACTION = {"hint": "continue", "warn": "try_alternative", "block": "try_alternative", "stop": "stop"}
"""DeerFlow's ``recommended_next_action`` for each action."""
_ERROR_TYPES = {"PERMISSION_DENIED": "permission", "TIMEOUT": "transient", "CONNECTION_REFUSED": "transient",
                "NETWORK_UNAVAILABLE": "transient"}
"""Signatures with a DeerFlow ``error_type`` of their own; ``…_NOT_FOUND`` ones are ``not_found``,
the rest ``unknown``.  Only values DeerFlow declares are used (``tool_result_meta.py`` and
``tool_progress_middleware.py`` in bytedance/deer-flow): its consumers build ``ToolResultMeta(**meta)``."""

Content = str | list[str | dict[str, Any]]

_NO_CAPTURES = ALLOW.captures
"""The captures every decision without any shares."""


def policy_metadata(decision: Decision) -> dict[str, Any]:
    """``additional_kwargs["policy"]``: what fired, on what, and the counts behind it."""
    rule, captures = decision.rule, decision.captures
    counts: dict[str, int] = {}
    for key, value in decision.metadata.items():  # a loop, not a comprehension: no frame of its own
        if type(value) is int:
            counts[key] = value
    return {
        "action": decision.action,
        "rule": f"{rule.kind} {rule.name}" if rule else None,  # ``str(rule)``, without its call
        "signature": decision.signature,
        "captures": {} if captures is _NO_CAPTURES else dict(captures),  # a loop decision's: none
        "counts": counts,
    }


def stopped_ai_message(message: AIMessage, decision: Decision) -> AIMessage:
    """The model's message with its tool calls removed and the stop text appended; a ``tool_calls``
    finish reason becomes ``stop`` (DeerFlow's ``LoopDetectionMiddleware._build_hard_stop_update``)."""
    additional = dict(message.additional_kwargs)
    additional.pop("tool_calls", None)
    additional.pop("function_call", None)
    additional[POLICY_KEY] = policy_metadata(decision)
    response = dict(message.response_metadata)
    if response.get("finish_reason") == "tool_calls":  # the calls are gone; any other reason stays
        response["finish_reason"] = "stop"
    return message.model_copy(update={
        "content": append_text(message.content, decision_text(decision), drop_tool_calls=True),
        "tool_calls": [],
        "invalid_tool_calls": [],
        "additional_kwargs": additional,
        "response_metadata": response,
    })


def blocked_tool_message(call: ToolCall, decision: Decision) -> ToolMessage:
    """The answer to a call that was not executed."""
    return ToolMessage(
        content=decision_text(decision),
        status="error",
        name=call.name,
        tool_call_id=call.id,
        additional_kwargs={
            POLICY_KEY: policy_metadata(decision),
            DEERFLOW_META_KEY: _refusal_meta(decision),
        },
    )


def annotated_tool_message(message: ToolMessage, decision: Decision) -> ToolMessage:
    """The tool's own message with the decision's text appended after a blank line."""
    additional = dict(message.additional_kwargs)
    additional[POLICY_KEY] = policy_metadata(decision)
    additional[DEERFLOW_META_KEY] = deerflow_meta(decision, message.status, additional.get(DEERFLOW_META_KEY))
    return message.model_copy(update={
        "content": append_text(message.content, decision_text(decision)),
        "additional_kwargs": additional,
    })


def deerflow_meta(decision: Decision, status: str, existing: Any) -> dict[str, Any]:
    """DeerFlow's tool-result meta for an executed call.  One stamped by an inner middleware
    (DeerFlow's ToolErrorHandlingMiddleware) keeps its classification; the guard only says
    what to do next.  Otherwise the guard classifies the result it read (``content_analysis``)."""
    next_action = _NEXT_ACTION.get(decision.action, "continue")
    if isinstance(existing, dict):
        if decision.action in ("warn", "stop"):
            return {**existing, "recommended_next_action": next_action,
                    "recoverable_by_model": decision.action != "stop"}
        return dict(existing)
    failed = status == "error" or _diagnosed_failed(decision)
    return {
        "status": "error" if failed else "success",
        "error_type": _error_type(decision) if failed else None,
        "recoverable_by_model": decision.action != "stop",
        "recommended_next_action": next_action,
        "source": "content_analysis",
    }


def _refusal_meta(decision: Decision) -> dict[str, Any]:
    """The meta of a call the guard did not run: a blocked write is the tool's own error answer
    (``tool_return``, as DeerFlow's ReadBeforeWriteMiddleware stamps its refusals); a call refused
    because the run stopped is the progress guard's block."""
    if decision.action == "stop":
        return {"status": "error", "error_type": "blocked_by_progress_guard", "recoverable_by_model": False,
                "recommended_next_action": "stop", "source": "progress_middleware"}
    return {"status": "error", "error_type": _error_type(decision), "recoverable_by_model": True,
            "recommended_next_action": _NEXT_ACTION["block"], "source": "tool_return"}


def _diagnosed_failed(decision: Decision) -> bool:
    """Did the policy read the result as failed (``fails_when``, ``Error:``), whatever its status?"""
    return any(part.metadata.get("failed") is True for part in (decision, *decision.parts))


def _error_type(decision: Decision) -> str:
    """A DeerFlow ``error_type``: from the signature the result showed, else ``unknown``."""
    signature = decision.signature or ""
    if signature.endswith("_NOT_FOUND"):
        return "not_found"
    return _ERROR_TYPES.get(signature, "unknown")


def append_text(content: Content, text: str, *, drop_tool_calls: bool = False) -> Content:
    """``content`` followed by ``text`` after a blank line (a new text block for block lists; a
    content that is neither, such as None, is read as its text)."""
    if not isinstance(content, list):
        content = message_text(content)
    if isinstance(content, str):
        return f"{content.rstrip()}\n\n{text}" if content.strip() else text
    blocks = [block for block in content if not (
        drop_tool_calls and isinstance(block, dict) and block.get("type") in _TOOL_CALL_BLOCK_TYPES)]
    return [*blocks, {"type": "text", "text": text}]


def message_text(content: Content) -> str:
    """The text of a message's content (the text blocks of a block list, joined; None is no text,
    bytes are read as UTF-8, anything else as its ``str``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        if content is None:
            return ""
        return content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
    parts = [block if isinstance(block, str) else str(block.get("text", "")) for block in content
             if isinstance(block, str) or block.get("type") == "text"]
    return "\n".join(part for part in parts if part)
