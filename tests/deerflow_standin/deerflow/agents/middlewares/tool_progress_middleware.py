"""Mirrors ``agents/middlewares/tool_progress_middleware.py`` where it reads tool meta.

It parses every result's ``deerflow_tool_meta`` with ``ToolResultMeta(**meta)`` as DeerFlow's
``_parse_tool_meta`` does, and records what it could not parse (DeerFlow logs and skips it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from deerflow.agents.middlewares.tool_result_meta import TOOL_META_KEY, ToolResultMeta

Outcome = ToolMessage | Command[Any]


class ToolProgressMiddleware(AgentMiddleware):
    def __init__(self) -> None:
        super().__init__()
        self.parsed: list[ToolResultMeta] = []
        self.unparsed: list[Any] = []

    def _read(self, result: Outcome) -> Outcome:
        if isinstance(result, ToolMessage):
            meta = (result.additional_kwargs or {}).get(TOOL_META_KEY)
            try:
                self.parsed.append(ToolResultMeta(**meta))
            except TypeError:
                self.unparsed.append(meta)
        return result

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], Outcome]) -> Outcome:
        return self._read(handler(request))

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[Outcome]]) -> Outcome:
        return self._read(await handler(request))
