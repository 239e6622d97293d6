"""Mirrors ``agents/middlewares/clarification_middleware.py``: a marker, always last in DeerFlow's chains."""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware


class ClarificationMiddleware(AgentMiddleware):
    pass
