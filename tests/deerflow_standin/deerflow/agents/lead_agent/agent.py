"""Mirrors ``agents/lead_agent/agent.py``: ``build_middlewares`` and ``make_lead_agent``.

``build_middlewares`` returns the lead chain in DeerFlow's order for the parts that matter
here: the shared runtime chain (…, ReadBeforeWrite, ToolProgress, ToolErrorHandling), then
LoopDetection, then ``custom_middlewares`` (appended inside the error handler, as DeerFlow
does), then SafetyFinishReason and Clarification.  ``make_lead_agent`` calls the module's
``build_middlewares`` at graph-build time, as DeerFlow's ``_make_lead_agent`` does.  Stand-in
liberty: DeerFlow builds the model and tools from its config; here they come from
``config["configurable"]["model"]`` and ``["tools"]``.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware

from deerflow.agents.middlewares.clarification_middleware import ClarificationMiddleware
from deerflow.agents.middlewares.loop_detection_middleware import LoopDetectionMiddleware
from deerflow.agents.middlewares.tool_error_handling_middleware import (
    SafetyFinishReasonMiddleware,
    build_lead_runtime_middlewares,
)


def build_middlewares(config: dict[str, Any], model_name: str | None,
                      custom_middlewares: list[AgentMiddleware] | None = None,
                      **_: Any) -> list[AgentMiddleware]:
    middlewares = build_lead_runtime_middlewares()
    if config.get("configurable", {}).get("loop_detection", True):
        middlewares.append(LoopDetectionMiddleware())
    if custom_middlewares:
        middlewares.extend(custom_middlewares)
    middlewares.append(SafetyFinishReasonMiddleware())
    middlewares.append(ClarificationMiddleware())
    return middlewares


def make_lead_agent(config: dict[str, Any]) -> Any:
    configurable = config["configurable"]
    return create_agent(model=configurable["model"], tools=configurable["tools"],
                        middleware=build_middlewares(config, model_name=None))
