"""What the guard does when its store or its input misbehaves: it keeps every decision it can.

A write gate's verdict and a result's signature hint need no state, so they
are computed first and stand whatever the store does.  A store fault (a
connection refused, a lock that stays taken, text it cannot encode) costs
only the loop counting of that event: the decision's metadata says so, and
the fault is logged at WARNING once per outage, not once per call.

Arguments nested deeper than ``MAX_ARG_DEPTH`` are not given to the loop
layers (their call key would take a recursion as deep as the nesting); the
gates, which read only top-level arguments, still check the call.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from policy.model.events import Scope, ToolCall
from policy.runtime.loops.state import ScopeState
from policy.stores.memory import MemoryStore, Store

log = logging.getLogger("policy.guard")

MAX_ARG_DEPTH = 64
"""The deepest nesting of lists and objects in a call's arguments that loop detection reads."""

T = TypeVar("T")


class StoreFault:
    """A store fault met during one event: why loop counting was skipped for it."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def facts(self) -> dict[str, Any]:
        """What the event's decision metadata says about it."""
        return {"loop_state": "unavailable", "loop_state_reason": self.reason}


RESET = "reset"
"""``loop_state`` when the store had to start the scope's state afresh (``ScopeState.restarted``)."""


class Stored(Generic[T]):
    """What ``GuardedStore.run`` gives back: ``work``'s value (unless the store failed) and what the
    event's decision metadata must say about the store (a fault, a state started afresh)."""

    __slots__ = ("facts", "failed", "value")

    def __init__(self, value: T | None, facts: dict[str, Any], *, failed: bool = False) -> None:
        self.value = value
        self.facts = facts
        self.failed = failed


class GuardedStore:
    """One guard's access to its store: each fault is kept from the decision and logged once per outage."""

    def __init__(self, store: Store, policy_name: str) -> None:
        self.store = store
        self.memory = store if type(store) is MemoryStore else None
        """The store when it is the in-memory one, which cannot fault: its scopes need no fault handling."""
        self._policy_name = policy_name
        self._failing: str | None = None
        self._lock = threading.Lock()

    def run(self, scope: Scope, work: Callable[[ScopeState], T]) -> Stored[T]:
        """``work`` on the scope's state; a store fault (not one of ``work``) fails the result.

        A fault while saving keeps what ``work`` returned: the event's decision
        stands, only its update of the loop state is lost.  A state the store
        started afresh (unreadable, or too large to keep) is said in the facts.
        """
        if self.memory is not None:
            return Stored(self.memory.run(scope, work), {})
        manager = self.store.scope(scope)
        try:
            state = manager.__enter__()
        except Exception as err:
            return Stored(None, self._fault(err).facts(), failed=True)
        try:
            result = work(state)
        except BaseException:
            if not manager.__exit__(*sys.exc_info()):
                raise
            raise AssertionError("a store must not swallow the guard's exceptions") from None
        try:
            manager.__exit__(None, None, None)
        except Exception as err:
            return Stored(result, self._fault(err).facts())
        self._recovered()
        if state.restarted is not None:
            return Stored(result, {"loop_state": RESET, "loop_state_reason": state.restarted})
        return Stored(result, {})

    def _fault(self, err: Exception) -> StoreFault:
        reason = f"{type(err).__name__}: {err}"
        with self._lock:
            first = self._failing is None
            self._failing = reason
        if first:
            log.warning("policy %s: the loop state store failed (%s); loop counting is off until it answers",
                        self._policy_name, reason)
        return StoreFault(reason)

    def _recovered(self) -> None:
        if self._failing is None:
            return
        with self._lock:
            was, self._failing = self._failing, None
        if was is not None:
            log.warning("policy %s: the loop state store answers again; loop counting resumes",
                        self._policy_name)


_FLAT = (str, int, float, type(None))
"""Argument values that nest nothing (``bool`` is an ``int``)."""


def too_deep(call: ToolCall) -> bool:
    """Whether the call's arguments nest lists and objects more than ``MAX_ARG_DEPTH`` deep."""
    for value in call.args.values():
        if not isinstance(value, _FLAT):
            break
    else:  # flat arguments, the common case: one level deep
        return False
    stack: list[tuple[Any, int]] = [(call.args, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_ARG_DEPTH:
            return True
        if isinstance(value, Mapping):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1) for item in value)
    return False


TOO_DEEP_FACTS = {"loops": "unchecked", "loops_reason": f"arguments nested more than {MAX_ARG_DEPTH} deep"}
"""The metadata of a decision whose call the loop layers could not read."""
