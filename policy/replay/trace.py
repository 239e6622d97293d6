"""The trace format: JSON Lines of recorded sessions (docs/design.md, "Trace format").

    {"type": "file", "path": "app.py", "content": "…"}
    {"type": "turn", "thread": "t1", "run": "r1", "calls": [{"id": "c1", "tool": "bash", "args": {…}}]}
    {"type": "result", "id": "c1", "status": "error", "content": "…"}
    {"type": "result", "id": "c2", "content": "", "files": {"app.py": "…", "old.py": null}}

A line that is not a valid event becomes a ``TraceError`` naming the line;
reading goes on with the next line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FileEvent(_Event):
    type: Literal["file"]
    path: str
    content: str


class TraceCall(_Event):
    id: str
    tool: str
    args: Any = None


class TurnEvent(_Event):
    type: Literal["turn"]
    thread: str = "default"
    run: str | None = None
    calls: list[TraceCall]


class ResultEvent(_Event):
    type: Literal["result"]
    id: str
    status: Literal["success", "error"] = "success"
    content: Any = ""
    files: dict[str, str | None] | None = None
    """The files the call changed, as it left them (path → text; null: deleted)."""


Event = FileEvent | TurnEvent | ResultEvent
_ADAPTER: TypeAdapter[Event] = TypeAdapter(Annotated[Event, Field(discriminator="type")])


@dataclass(frozen=True)
class TraceError:
    """A trace line that could not be read."""

    line: int
    message: str


def read_events(lines: Iterable[str]) -> Iterator[tuple[int, Event | TraceError]]:
    """Yield ``(line number, event or TraceError)``; blank lines are skipped."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            yield number, TraceError(number, f"not JSON: {err.msg} (column {err.colno})")
            continue
        except RecursionError:
            yield number, TraceError(number, "lists or objects nested too deeply to read")
            continue
        try:
            yield number, _ADAPTER.validate_python(data)
        except RecursionError:
            yield number, TraceError(number, "invalid event: lists or objects nested too deeply")
        except ValidationError as err:
            problem = err.errors()[0]
            where = ".".join(str(p) for p in problem["loc"]) or "event"
            yield number, TraceError(number, f"invalid event: {where}: {problem['msg']}")
