"""Which (thread, run) scope a LangGraph node or tool call belongs to.

The ids come from the run's context (``runtime.context``, a dict or an object
with ``thread_id``/``run_id``), else from LangGraph's ``execution_info``, else
from the config's ``configurable``.  A context dict that holds ``run_id`` answers
for the run whatever the value, as DeerFlow keys a run by the key's presence:
``run_id: None`` (DeerFlow's subagent executor for an embedded client's
subagent) is a run without an id, even inside a run whose config names one,
and its stop reason is ``consume_stop_reason(None)``'s.  One run id spans every
graph entry of a run (a caller that re-enters the graph for the same run
passes the same id), and a new run id starts a fresh loop budget.

A run without an id gets an opaque generated one, the same for every node of
one agent invocation and new for the next.  LangGraph builds a new
``Runtime`` for every node but shares one ``RunControl`` object across the
whole invocation (and with the graphs nested in it), so the generated id is
anchored to that object.  The map holds the object itself, so it cannot be
freed and its address reused while it is mapped; ``leave`` releases it when
the invocation's last graph entry ends, and the map's bound covers
invocations that never reach their end (an exception, an interrupt).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from policy.model.events import Scope
from policy.stores.lru import LruDict

DEFAULT_THREAD = "default"
UNANCHORED_RUN = "unanchored"
"""The run id of calls made outside a graph invocation that name no run (direct calls, unit tests)."""


def _field(source: Any, name: str) -> Any:
    """``source[name]`` for a mapping, else ``source.name``; None when absent."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _first_id(*candidates: Any) -> str | None:
    for candidate in candidates:
        if candidate is not None and str(candidate):
            return str(candidate)
    return None


class RunScopes:
    """Resolves scopes and tracks the graph entries in progress for each of them.

    Thread-safe.  ``limit`` bounds both the anchors of runs without an id and
    the entry counters.
    """

    def __init__(self, limit: int = 1000) -> None:
        self._lock = threading.Lock()
        self._anchors: LruDict[object, str] = LruDict(limit)
        self._entries: LruDict[tuple[str, str], int] = LruDict(limit)
        self._named: LruDict[tuple[str, str], Scope] = LruDict(limit)

    def resolve(self, context: Any, execution_info: Any, configurable: Mapping[str, Any],
                anchor: object | None) -> Scope:
        """The scope of a node or tool call; ``anchor`` is the invocation's shared ``RunControl``."""
        thread_id = _first_id(_field(context, "thread_id"), _field(execution_info, "thread_id"),
                              configurable.get("thread_id")) or DEFAULT_THREAD
        if isinstance(context, Mapping) and "run_id" in context:  # the caller's own answer, None included
            run_id = _first_id(context["run_id"])
        else:
            run_id = _first_id(_field(context, "run_id"), _field(execution_info, "run_id"),
                               configurable.get("run_id"))
        if run_id is None:
            return Scope(thread_id=thread_id, run_id=self._anonymous_run(anchor), run_id_given=False)
        return Scope(thread_id=thread_id, run_id=run_id)

    def named(self, context: Any) -> Scope | None:
        """The scope of a context that is a dict naming both ids as non-empty strings (DeerFlow's
        shape: the scope ``resolve`` gives it, one object per pair, the most recent ``limit``
        kept); None otherwise."""
        if type(context) is not dict:
            return None
        thread_id, run_id = context.get("thread_id"), context.get("run_id")
        if type(thread_id) is not str or type(run_id) is not str or not thread_id or not run_id:
            return None
        key = (thread_id, run_id)
        scope = self._named.peek(key)  # a hit needs no lock
        if scope is None:
            scope = Scope(thread_id=thread_id, run_id=run_id)
            with self._lock:
                self._named.put(key, scope)
        return scope

    def enter(self, scope: Scope) -> None:
        """An agent invocation of this scope starts (nested agents count too)."""
        with self._lock:
            self._entries.put(scope.key, (self._entries.get(scope.key) or 0) + 1)

    def leave(self, scope: Scope, anchor: object | None) -> bool:
        """An agent invocation of this scope ends.  True when it was the last one in progress:
        the caller then clears the scope's transient state, and the anchor is released."""
        with self._lock:
            remaining = (self._entries.get(scope.key) or 0) - 1
            if remaining > 0:
                self._entries.put(scope.key, remaining)
                return False
            self._entries.pop(scope.key)
            if anchor is not None and self._anchors.get(anchor) == scope.run_id:
                self._anchors.pop(anchor)
            return True

    def anchored_runs(self) -> int:
        """How many generated run ids are currently anchored (for tests and diagnostics)."""
        with self._lock:
            return len(self._anchors)

    def _anonymous_run(self, anchor: object | None) -> str:
        if anchor is None:
            return UNANCHORED_RUN
        with self._lock:
            return self._anchors.get_or_put(anchor, self._new_run_id)

    @staticmethod
    def _new_run_id() -> str:
        """An opaque run id, for an invocation that named none."""
        return f"run-{uuid.uuid4().hex}"
