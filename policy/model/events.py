"""What a harness reports: tool calls, their results, and the scope they belong to."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

ResultStatus = Literal["success", "error"]


def _coerce_args(raw: Any) -> dict[str, Any]:
    """Tool arguments as a dict: a JSON string is parsed; anything else that is not a dict
    becomes ``{"input": raw}`` so a malformed call never crashes the guard."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested past what the parser can read
            return {"input": raw}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    if raw is None:
        return {}
    return {"input": raw}


@dataclass(frozen=True, slots=True, init=False)
class ToolCall:
    """One tool call the model asked for."""

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def __init__(self, id: str, name: str, args: dict[str, Any] | None = None) -> None:
        """The fields as given, coerced where malformed (``args`` by ``_coerce_args``, the ids
        by ``str``): one call per event, where a generated ``__init__`` and ``__post_init__``
        would be two."""
        _set(self, "id", id if type(id) is str else str(id))
        _set(self, "name", name if type(name) is str else str(name))
        _set(self, "args", args if type(args) is dict else _coerce_args(args))


_set = object.__setattr__
"""How a frozen event's ``__init__`` sets its fields."""


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returned."""

    content: str
    status: ResultStatus = "success"

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            object.__setattr__(self, "content", _stringify(self.content))
        if self.status not in ("success", "error"):
            failed = str(self.status).lower() in ("failed", "failure")
            object.__setattr__(self, "status", "error" if failed else "success")


def _stringify(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, bytes):
        return content.decode("utf-8", "replace")
    if isinstance(content, list):  # LangChain content blocks
        parts = [block.get("text", "") if isinstance(block, dict) else str(block) for block in content]
        return "\n".join(p for p in parts if p)
    return str(content)


@dataclass(frozen=True)
class Scope:
    """The unit whose history loop detection tracks: one run of one thread.

    A missing ``run_id`` gets a fresh opaque id (never derived from ``id()`` of
    anything): build one ``Scope`` per agent invocation and pass that same
    object with every event of the invocation.
    """

    thread_id: str = "default"
    run_id: str | None = None
    run_id_given: bool = field(default=True, compare=False, repr=False)
    """Whether the caller named this run (False for an id made for a run that named none)."""

    def __post_init__(self) -> None:
        if self.run_id is None:
            object.__setattr__(self, "run_id", f"anon-{os.urandom(16).hex()}")
            object.__setattr__(self, "run_id_given", False)

    @cached_property
    def key(self) -> tuple[str, str]:
        """The scope's identity, (thread id, run id): what stores and hooks key a scope's state by
        (made once per scope: every event of the scope reads it)."""
        return (self.thread_id, self.run_id or "")
