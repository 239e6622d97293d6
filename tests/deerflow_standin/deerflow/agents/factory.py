"""Mirrors ``agents/factory.py``: ``create_deerflow_agent`` and its chain assembly.

``_assemble_from_features`` keeps DeerFlow's order for the middlewares that matter here
(DanglingToolCall, ToolErrorHandling, LoopDetection, Clarification; ``loop_detection`` may be
False or a replacement instance), and ``_insert_extra`` places ``extra_middleware`` by the
``_next_anchor``/``_prev_anchor`` their classes carry, unanchored ones before
Clarification, which stays last.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware

from deerflow.agents.features import RuntimeFeatures
from deerflow.agents.middlewares.clarification_middleware import ClarificationMiddleware
from deerflow.agents.middlewares.dangling_tool_call_middleware import DanglingToolCallMiddleware
from deerflow.agents.middlewares.loop_detection_middleware import LoopDetectionMiddleware
from deerflow.agents.middlewares.tool_error_handling_middleware import ToolErrorHandlingMiddleware

Middleware = AgentMiddleware


def create_deerflow_agent(model: Any, tools: list[Any] | None = None, *, middleware: list[Any] | None = None,
                          features: RuntimeFeatures | None = None,
                          extra_middleware: list[Any] | None = None) -> Any:
    if middleware is not None and (features is not None or extra_middleware):
        raise ValueError("Cannot combine 'middleware' with 'features' or 'extra_middleware'.")
    chain = list(middleware) if middleware is not None else assemble_from_features(
        features or RuntimeFeatures(), extra_middleware or [])
    return create_agent(model=model, tools=tools or None, middleware=chain)


def assemble_from_features(feat: RuntimeFeatures, extra: list[Middleware]) -> list[Middleware]:
    chain: list[Middleware] = [DanglingToolCallMiddleware(), ToolErrorHandlingMiddleware()]
    if feat.loop_detection is not False:
        chain.append(feat.loop_detection if isinstance(feat.loop_detection, AgentMiddleware)
                     else LoopDetectionMiddleware())
    chain.append(ClarificationMiddleware())
    if extra:
        insert_extra(chain, extra)
        last = next(i for i, m in enumerate(chain) if isinstance(m, ClarificationMiddleware))
        chain.append(chain.pop(last))
    return chain


def insert_extra(chain: list[Middleware], extras: list[Middleware]) -> None:
    anchored = []
    clarification = next(i for i, m in enumerate(chain) if isinstance(m, ClarificationMiddleware))
    for mw in extras:
        next_anchor = getattr(type(mw), "_next_anchor", None)
        prev_anchor = getattr(type(mw), "_prev_anchor", None)
        if next_anchor and prev_anchor:
            raise ValueError(f"{type(mw).__name__} cannot have both @Next and @Prev")
        if next_anchor or prev_anchor:
            anchored.append((mw, "next" if next_anchor else "prev", next_anchor or prev_anchor))
        else:
            chain.insert(clarification, mw)
            clarification += 1
    for mw, direction, anchor in anchored:
        index = next((i for i, m in enumerate(chain) if isinstance(m, anchor)), None)
        if index is None:
            raise ValueError(f"Cannot resolve positions for {type(mw).__name__}")
        chain.insert(index + 1 if direction == "next" else index, mw)
