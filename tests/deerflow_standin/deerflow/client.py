"""Mirrors ``client.py``: the embedded ``DeerFlowClient`` and how it builds its lead agent.

The module imports ``build_middlewares`` *by name* from ``deerflow.agents.lead_agent.agent``
(as DeerFlow's does), so wrapping the lead-agent module's function alone does not reach it.
``_ensure_agent`` builds the agent once, with ``custom_middlewares=self._middlewares``, and
keeps it for every later call; each ``stream`` is a new run: its context is
``{"thread_id": …, "run_id": <a fresh uuid4>}`` and it streams the graph synchronously.
Stand-in liberty: DeerFlow builds the model and tools from its config; here they are
arguments, and ``stream`` yields the graph's state values rather than DeerFlow's events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware

from deerflow.agents.lead_agent.agent import build_middlewares


class DeerFlowClient:
    def __init__(self, model: Any, tools: list[Any], *,
                 middlewares: Sequence[AgentMiddleware] | None = None) -> None:
        self._model, self._tools = model, tools
        self._middlewares = list(middlewares or [])
        self._agent: Any = None

    def _ensure_agent(self) -> None:
        if self._agent is not None:
            return
        middleware = build_middlewares({"configurable": {}}, model_name=None,
                                       custom_middlewares=self._middlewares)
        self._agent = create_agent(model=self._model, tools=self._tools, middleware=middleware)

    def stream(self, message: str, *, thread_id: str | None = None) -> Iterator[dict[str, Any]]:
        thread_id = thread_id or str(uuid.uuid4())
        context: dict[str, Any] = {"thread_id": thread_id, "run_id": str(uuid.uuid4())}
        self._ensure_agent()
        yield from self._agent.stream({"messages": [("user", message)]}, context=context,
                                      stream_mode="values")

    def chat(self, message: str, *, thread_id: str | None = None) -> str:
        states = list(self.stream(message, thread_id=thread_id))
        return str(states[-1]["messages"][-1].text) if states else ""
