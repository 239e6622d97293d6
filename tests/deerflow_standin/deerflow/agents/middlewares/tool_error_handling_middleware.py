"""Mirrors ``agents/middlewares/tool_error_handling_middleware.py``.

``ToolErrorHandlingMiddleware`` turns a tool exception into DeerFlow's error ToolMessage and
stamps every result's ``deerflow_tool_meta``.  ``build_subagent_runtime_middlewares`` returns
the subagent chain in DeerFlow's order (``_build_runtime_middlewares``: first in the list is
the outermost wrapper), with ``LoopDetectionMiddleware`` appended late as DeerFlow does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from deerflow.agents.middlewares.tool_result_meta import (
    TOOL_META_KEY,
    classify,
    make_meta,
    normalize_tool_result,
)

Outcome = ToolMessage | Command[Any]


class ToolErrorHandlingMiddleware(AgentMiddleware):
    def _error_message(self, request: ToolCallRequest, exc: Exception) -> ToolMessage:
        name = str(request.tool_call.get("name") or "unknown_tool")
        detail = str(exc).strip() or type(exc).__name__
        message = ToolMessage(
            content=f"Error: Tool '{name}' failed with {type(exc).__name__}: {detail}. "
                    "Continue with available context, or choose an alternative tool.",
            tool_call_id=str(request.tool_call.get("id") or "missing_tool_call_id"), name=name,
            status="error")
        message.additional_kwargs = {TOOL_META_KEY: make_meta(status="error", source="exception",
                                                              **classify(f"{type(exc).__name__}: {detail}"))}
        return message

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], Outcome]) -> Outcome:
        try:
            result = handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self._error_message(request, exc)
        return normalize_tool_result(result)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[Outcome]]) -> Outcome:
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self._error_message(request, exc)
        return normalize_tool_result(result)


class SandboxMiddleware(AgentMiddleware):
    """Marker for DeerFlow's sandbox acquisition (``sandbox/middleware.py``)."""


class SandboxAuditMiddleware(AgentMiddleware):
    """Marker for ``agents/middlewares/sandbox_audit_middleware.py``."""


class SafetyFinishReasonMiddleware(AgentMiddleware):
    """Marker for ``agents/middlewares/safety_finish_reason_middleware.py`` (after loop detection)."""


def _runtime_chain(*, read_before_write: bool = True, tool_progress: bool = True) -> list[AgentMiddleware]:
    """``_build_runtime_middlewares``' tool-axis order: …, SandboxAudit, ReadBeforeWrite, ToolProgress,
    ToolErrorHandling."""
    from deerflow.agents.middlewares.read_before_write_middleware import ReadBeforeWriteMiddleware
    from deerflow.agents.middlewares.tool_progress_middleware import ToolProgressMiddleware

    chain: list[AgentMiddleware] = [SandboxMiddleware(), SandboxAuditMiddleware()]
    if read_before_write:
        chain.append(ReadBeforeWriteMiddleware())
    if tool_progress:
        chain.append(ToolProgressMiddleware())
    chain.append(ToolErrorHandlingMiddleware())
    return chain


def build_lead_runtime_middlewares(*, read_before_write: bool = True,
                                   tool_progress: bool = True) -> list[AgentMiddleware]:
    return _runtime_chain(read_before_write=read_before_write, tool_progress=tool_progress)


def build_subagent_runtime_middlewares(*, loop_detection: bool = True, read_before_write: bool = True,
                                       **_: Any) -> list[AgentMiddleware]:
    """The subagent chain: the shared runtime chain, then LoopDetection, then SafetyFinishReason."""
    from deerflow.agents.middlewares.loop_detection_middleware import LoopDetectionMiddleware

    chain = _runtime_chain(read_before_write=read_before_write)
    if loop_detection:
        chain.append(LoopDetectionMiddleware())
    chain.append(SafetyFinishReasonMiddleware())
    return chain
