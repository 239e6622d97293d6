"""Mirrors ``subagents/executor.py``: how ``SubagentExecutor`` builds and runs a subagent.

``_create_agent`` imports ``build_subagent_runtime_middlewares`` from
``deerflow.agents.middlewares.tool_error_handling_middleware`` when it runs (a fresh chain per
task) and keeps every middleware that has ``consume_stop_reason``.  ``_aexecute`` streams the
graph asynchronously with DeerFlow's context keys: ``thread_id`` only when set, ``run_id``
always (None for an embedded client's subagent), ``is_subagent``; afterwards
``consume_stop_reason(self.run_id)`` on each guard gives the result's ``stop_reason``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent


@dataclass
class SubagentResult:
    status: str
    result: str | None = None
    stop_reason: str | None = None


class SubagentExecutor:
    def __init__(self, model: Any, tools: list[Any], *, thread_id: str | None = None,
                 run_id: str | None = None) -> None:
        self.model, self.tools = model, tools
        self.thread_id, self.run_id = thread_id, run_id
        self._stop_reason_middlewares: list[Any] = []

    def _create_agent(self) -> Any:
        from deerflow.agents.middlewares.tool_error_handling_middleware import (
            build_subagent_runtime_middlewares,
        )

        middlewares = build_subagent_runtime_middlewares()
        self._stop_reason_middlewares = [m for m in middlewares if hasattr(m, "consume_stop_reason")]
        return create_agent(model=self.model, tools=self.tools, middleware=middlewares)

    def _consume_guard_stop_reason(self) -> str | None:
        for middleware in self._stop_reason_middlewares:
            reason = middleware.consume_stop_reason(self.run_id)
            if reason is not None:
                return str(reason)
        return None

    async def _aexecute(self, task: str) -> SubagentResult:
        agent = self._create_agent()
        context: dict[str, Any] = {}
        if self.thread_id:
            context["thread_id"] = self.thread_id
        context["run_id"] = self.run_id
        context["is_subagent"] = True
        final: Any = None
        state = {"messages": [("user", task)]}
        async for chunk in agent.astream(state, context=context, stream_mode="values"):
            final = chunk
        last = final["messages"][-1]
        return SubagentResult("completed", result=last.text, stop_reason=self._consume_guard_stop_reason())

    def execute(self, task: str) -> SubagentResult:
        return asyncio.run(self._aexecute(task))
