"""Mirrors ``agents/middlewares/tool_result_meta.py``: the ``deerflow_tool_meta`` contract.

``ToolResultMeta`` has exactly DeerFlow's five fields and closed value sets (consumers build
it with ``ToolResultMeta(**meta)``); ``normalize_tool_message`` stamps a result that has no
meta yet, keeping an existing stamp, with DeerFlow's ``Error:``-prefix and status rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langgraph.types import Command

TOOL_META_KEY = "deerflow_tool_meta"

STATUSES = frozenset({"success", "error", "partial_success"})
SOURCES = frozenset({"exception", "tool_return", "content_analysis", "progress_middleware"})
NEXT_ACTIONS = frozenset({"continue", "rewrite_query", "try_alternative", "summarize", "stop"})
ERROR_TYPES = frozenset({"auth", "rate_limited", "transient", "config", "permission", "no_results",
                         "not_found", "internal", "unknown", "blocked_by_progress_guard"})
"""Every ``error_type`` DeerFlow declares: its ``_ERROR_RULES``, ``_UNKNOWN_ERROR`` and
ToolProgressMiddleware's block."""

_RULES: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("permission denied", "access denied"),
     {"error_type": "permission", "recoverable_by_model": True,
      "recommended_next_action": "try_alternative"}),
    (("not found", "no such file", "does not exist"),
     {"error_type": "not_found", "recoverable_by_model": True, "recommended_next_action": "rewrite_query"}),
]
_UNKNOWN = {"error_type": "unknown", "recoverable_by_model": True,
            "recommended_next_action": "try_alternative"}


@dataclass(frozen=True, slots=True)
class ToolResultMeta:
    status: Literal["success", "error", "partial_success"]
    error_type: str | None
    recoverable_by_model: bool
    recommended_next_action: Literal["continue", "rewrite_query", "try_alternative", "summarize", "stop"]
    source: Literal["exception", "tool_return", "content_analysis", "progress_middleware"]


def classify(text: str) -> dict[str, Any]:
    lower = text.lower()
    for keywords, attrs in _RULES:
        if any(keyword in lower for keyword in keywords):
            return dict(attrs)
    return dict(_UNKNOWN)


def make_meta(*, status: str, source: str, error_type: str | None = None, recoverable_by_model: bool = True,
              recommended_next_action: str = "continue") -> dict[str, Any]:
    return {"status": status, "error_type": error_type, "recoverable_by_model": recoverable_by_model,
            "recommended_next_action": recommended_next_action, "source": source}


def normalize_tool_message(message: ToolMessage) -> ToolMessage:
    if (message.additional_kwargs or {}).get(TOOL_META_KEY) is not None:
        return message
    content = message.content if isinstance(message.content, str) else ""
    if message.status == "error" and not content.startswith("Error:"):
        meta = make_meta(status="error", source="tool_return", **classify(content))
    elif content.startswith("Error:"):
        meta = make_meta(status="error", source="tool_return", **classify(content[len("Error:"):]))
    else:
        meta = make_meta(status="success", source="content_analysis")
    message.additional_kwargs = {**(message.additional_kwargs or {}), TOOL_META_KEY: meta}
    return message


def normalize_tool_result(result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
    return normalize_tool_message(result) if isinstance(result, ToolMessage) else result
