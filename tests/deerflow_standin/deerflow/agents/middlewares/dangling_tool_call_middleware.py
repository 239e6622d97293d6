"""Mirrors ``agents/middlewares/dangling_tool_call_middleware.py``: a marker holding its place."""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware


class DanglingToolCallMiddleware(AgentMiddleware):
    pass
