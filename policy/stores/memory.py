"""Where loop state lives: the ``Store`` interface and the in-memory LRU store.

A store hands out one scope's ``ScopeState`` at a time (``with
store.scope(scope) as state:``), exclusively for the duration of the block,
created empty on first use and saved when the block ends.  Keep the block
free of ``await`` and of nested ``scope()`` calls: the in-memory store is then
both thread-safe and asyncio-safe, and never blocks for longer than the
evaluation itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol, TypeVar

from policy.model.events import Scope
from policy.runtime.loops.state import ScopeState
from policy.stores.lru import LruDict

T = TypeVar("T")


class Store(Protocol):
    """Per-scope loop state.  Implementations: ``MemoryStore``, ``policy.stores.file.FileStore``,
    ``policy.stores.redis.RedisStore``; ``tests/test_store_contract.py`` holds each to this contract."""

    def scope(self, scope: Scope) -> AbstractContextManager[ScopeState]:
        """Exclusive access to the scope's state, created empty on first use and saved on exit.

        A block that raises may keep or lose the changes it made before raising: the contract
        leaves it open (memory keeps them; file and Redis discard them).
        """
        ...

    def existing(self, scope: Scope) -> AbstractContextManager[ScopeState | None]:
        """``scope()`` for a scope that has state; None for one that has none, and then nothing is
        created or saved (so a run that never counted a call takes no place among the scopes)."""
        ...

    def drop_thread(self, thread_id: str) -> None:
        """Forget every run scope of the thread."""
        ...

    def drop_all(self) -> None:
        """Forget every scope of every thread."""
        ...

    def __len__(self) -> int:
        """The number of scopes tracked."""
        ...


class MemoryStore:
    """Scopes in one process's memory, at most ``max_scopes`` of them (the least recently used go).

    One short lock guards the LRU; a scope's own work runs under one of
    ``LOCK_STRIPES`` locks chosen by its key, so different scopes proceed in
    parallel.  A scope evicted while in use is simply forgotten afterwards.
    """

    LOCK_STRIPES = 64

    def __init__(self, max_scopes: int = 1000) -> None:
        if max_scopes < 1:
            raise ValueError(f"max_scopes must be at least 1, not {max_scopes}")
        self.max_scopes = max_scopes
        self._states: LruDict[tuple[str, str], ScopeState] = LruDict(max_scopes)
        self._lru_lock = threading.Lock()
        self._scope_locks = tuple(threading.RLock() for _ in range(self.LOCK_STRIPES))

    def scope(self, scope: Scope) -> AbstractContextManager[ScopeState]:
        return _Checkout(*self.checkout(scope))

    def checkout(self, scope: Scope) -> tuple[threading.RLock, ScopeState]:
        """The scope's state and the lock to hold while using it: ``with lock:`` gives what
        ``scope()`` gives, without a context manager object or a function of the caller's (the
        guard's path for every model turn).  Two callers of one scope get the same state and
        take turns on its lock; a state evicted or dropped meanwhile is simply forgotten
        afterwards, as one evicted while in use."""
        key = scope.key
        states = self._states
        with self._lru_lock:
            state = states.peek(key)
            if state is None:  # the scope's first event (or its state was evicted)
                state = states.get_or_put(key, ScopeState)
            else:
                states.touch(key)
        return self._scope_locks[hash(key) % self.LOCK_STRIPES], state

    def existing(self, scope: Scope) -> AbstractContextManager[ScopeState | None]:
        """The scope's state as ``scope()`` gives it, without making it the most recent; None
        when it has none."""
        key = scope.key
        with self._lru_lock:
            state = self._states.peek(key)
        if state is None:
            return nullcontext(None)
        return _Checkout(self._scope_locks[hash(key) % self.LOCK_STRIPES], state)

    def run(self, scope: Scope, work: Callable[[ScopeState], T]) -> T:
        """``work(state)`` with exclusive access to the scope's state."""
        lock, state = self.checkout(scope)
        with lock:
            return work(state)

    def drop_thread(self, thread_id: str) -> None:
        with self._lru_lock:
            self._states.pop_where(lambda key: key[0] == thread_id)

    def drop_all(self) -> None:
        with self._lru_lock:
            self._states.clear()

    def __len__(self) -> int:
        return len(self._states)


class _Checkout:
    """``MemoryStore.scope``'s context manager: a checked-out state, its lock held for the block."""

    __slots__ = ("_lock", "_state")

    def __init__(self, lock: threading.RLock, state: ScopeState) -> None:
        self._lock = lock
        self._state = state

    def __enter__(self) -> ScopeState:
        self._lock.acquire()
        return self._state

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()
