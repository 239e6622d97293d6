"""Mirrors ``agents/middlewares/read_before_write_middleware.py``: the read-before-write version gate.

A ``write_file``/``str_replace`` of an EXISTING file passes only when a ``read_file``
ToolMessage in the conversation carries the sha256 of the file's current content
(``deerflow_read_mark``); writes never refresh marks, so every chunk appended after the first
needs a read in between.  A blocked write gets DeerFlow's ``Error: … blocked`` message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from deerflow.agents.middlewares.tool_result_meta import normalize_tool_result

READ_MARK_KEY = "deerflow_read_mark"
Outcome = ToolMessage | Command[Any]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ReadBeforeWriteMiddleware(AgentMiddleware):
    def _blocked(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if call["name"] not in ("write_file", "str_replace"):
            return None
        path = Path(str(call["args"].get("path", "")))
        if not path.is_file():
            return None
        current = _hash(path.read_text(encoding="utf-8"))
        marks = [m.additional_kwargs.get(READ_MARK_KEY) for m in request.state.get("messages", [])
                 if isinstance(m, ToolMessage)]
        if current in marks:
            return None
        return ToolMessage(
            content=f"Error: {call['name']} blocked — {path} already exists and you have not read its "
                    "current version. Any write invalidates earlier reads, so re-read before every "
                    "modification. Call read_file on it (a ranged read of the relevant section is enough, "
                    "e.g. the last ~30 lines before an append), check what is already there, then retry.",
            tool_call_id=str(call.get("id")), name=call["name"], status="error")

    def _marked(self, request: ToolCallRequest, result: Outcome) -> Outcome:
        call = request.tool_call
        if call["name"] == "read_file" and isinstance(result, ToolMessage) and result.status != "error":
            path = Path(str(call["args"].get("path", "")))
            if path.is_file():
                result.additional_kwargs = {**result.additional_kwargs,
                                            READ_MARK_KEY: _hash(path.read_text(encoding="utf-8"))}
        return result

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], Outcome]) -> Outcome:
        blocked = self._blocked(request)
        if blocked is not None:
            return normalize_tool_result(blocked)
        return self._marked(request, handler(request))

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[Outcome]]) -> Outcome:
        blocked = self._blocked(request)
        if blocked is not None:
            return normalize_tool_result(blocked)
        return self._marked(request, await handler(request))
