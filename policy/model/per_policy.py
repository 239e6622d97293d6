"""Run-time tables derived from a compiled policy, built on first use and kept while it lives."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from policy.model.compiled import CompiledPolicy

_T = TypeVar("_T")


class PerPolicy(Generic[_T]):
    """``build(policy)`` once per compiled policy; later calls return the same object.

    Entries are keyed by ``id(policy)`` and dropped when the policy is freed,
    before that id can be reused.
    """

    def __init__(self, build: Callable[[CompiledPolicy], _T]) -> None:
        self._build = build
        self._built: dict[int, _T] = {}
        self._lock = threading.Lock()
        self.__doc__ = build.__doc__

    def __call__(self, policy: CompiledPolicy) -> _T:
        key = id(policy)
        try:
            return self._built[key]
        except KeyError:
            pass
        with self._lock:
            if key not in self._built:
                self._built[key] = self._build(policy)
                weakref.finalize(policy, self._built.pop, key, None)
            return self._built[key]

    def __len__(self) -> int:
        """How many policies have their table built."""
        return len(self._built)


def per_policy(build: Callable[[CompiledPolicy], _T]) -> PerPolicy[_T]:
    """Decorator: ``build`` becomes a ``PerPolicy``."""
    return PerPolicy(build)
