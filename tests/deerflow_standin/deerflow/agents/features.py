"""Mirrors ``agents/features.py``: ``RuntimeFeatures`` and the ``@Next``/``@Prev`` ordering decorators.

A decorator sets ``_next_anchor``/``_prev_anchor`` on the middleware class; the SDK factory
reads it from ``type(middleware)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware


@dataclass
class RuntimeFeatures:
    sandbox: bool | AgentMiddleware[Any, Any, Any] = False
    loop_detection: bool | AgentMiddleware[Any, Any, Any] = True


def Next(anchor: type[AgentMiddleware[Any, Any, Any]]) -> Callable[[type[Any]], type[Any]]:
    if not (isinstance(anchor, type) and issubclass(anchor, AgentMiddleware)):
        raise TypeError(f"@Next expects an AgentMiddleware subclass, got {anchor!r}")

    def decorator(cls: type[Any]) -> type[Any]:
        cls._next_anchor = anchor
        return cls

    return decorator


def Prev(anchor: type[AgentMiddleware[Any, Any, Any]]) -> Callable[[type[Any]], type[Any]]:
    if not (isinstance(anchor, type) and issubclass(anchor, AgentMiddleware)):
        raise TypeError(f"@Prev expects an AgentMiddleware subclass, got {anchor!r}")

    def decorator(cls: type[Any]) -> type[Any]:
        cls._prev_anchor = anchor
        return cls

    return decorator
