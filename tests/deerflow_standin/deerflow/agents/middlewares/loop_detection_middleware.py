"""Mirrors ``agents/middlewares/loop_detection_middleware.py`` in what the placement helper meets.

The identical-batch layer only (warn 3, hard limit 5): a warning is queued and injected into
the next model request as ``HumanMessage(name="loop_warning")``; a hard stop strips the tool
calls and records ``loop_capped`` for ``consume_stop_reason``.  Tests use it to show that a
chain the helper has guarded no longer warns twice.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

WARNING = "[LOOP DETECTED] You are repeating the same tool calls."


class LoopDetectionMiddleware(AgentMiddleware):
    def __init__(self, warn_threshold: int = 3, hard_limit: int = 5) -> None:
        super().__init__()
        self.warn_threshold, self.hard_limit = warn_threshold, hard_limit
        self._history: defaultdict[tuple[Any, Any], list[str]] = defaultdict(list)
        self._pending: defaultdict[tuple[Any, Any], list[str]] = defaultdict(list)
        self._stop_reason: dict[Any, str] = {}

    @staticmethod
    def _key(runtime: Any) -> tuple[Any, Any]:
        context = runtime.context or {}
        return context.get("thread_id") or "default", context.get("run_id")

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return None
        key = self._key(runtime)
        calls = (f"{c['name']}:{json.dumps(c['args'], sort_keys=True)}" for c in last.tool_calls)
        digest = json.dumps(sorted(calls))
        history = self._history[key]
        history.append(digest)
        count = history.count(digest)
        if count >= self.hard_limit:
            self._stop_reason[key[1]] = "loop_capped"
            return {"messages": [last.model_copy(update={"tool_calls": [], "content": "[FORCED STOP]"})]}
        if count == self.warn_threshold:
            self._pending[key].append(WARNING)
        return None

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    def _augment(self, request: ModelRequest) -> ModelRequest:
        warnings = self._pending.pop(self._key(request.runtime), [])
        if not warnings:
            return request
        notice = HumanMessage("\n\n".join(warnings), name="loop_warning")
        return request.override(messages=[*request.messages, notice])

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        return handler(self._augment(request))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        return await handler(self._augment(request))

    def consume_stop_reason(self, run_id: str | None) -> str | None:
        return self._stop_reason.pop(run_id, None)
