"""Mirrors ``agents/middlewares/clarification_middleware.py``: a marker; it is always last in DeerFlow's chains."""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware


class ClarificationMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    pass
