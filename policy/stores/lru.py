"""The one size-bounded mapping of the project: it forgets its least recently used entries
(scopes of ``MemoryStore``, the LangChain middleware's runs and stops)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruDict(Generic[K, V]):
    """At most ``limit`` entries; reading or writing an entry makes it the most recent.

    Not thread-safe: callers that share one across threads hold their own lock.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()
        self.peek: Callable[[K], V | None] = self._items.get
        """The value for ``key`` without making it the most recent: a read that needs no lock
        (entries then go in the order they were put).  The mapping's own ``get``: no Python call."""
        self.touch: Callable[[K], None] = self._items.move_to_end
        """Make ``key``'s entry the most recent (``KeyError`` when there is none): after a ``peek``
        that found it, what ``get`` does, without a Python call."""

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: K) -> bool:
        return key in self._items

    def get(self, key: K) -> V | None:
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: K, value: V) -> None:
        items = self._items
        items[key] = value
        items.move_to_end(key)
        if len(items) > self.limit:  # one entry over at most: ``limit`` never changes
            items.popitem(last=False)

    def get_or_put(self, key: K, make: Callable[[], V]) -> V:
        """The value for ``key``, storing ``make()`` first when there is none."""
        items = self._items
        if key in items:
            items.move_to_end(key)
            return items[key]
        value = make()
        self.put(key, value)
        return value

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def clear(self) -> None:
        self._items.clear()

    def pop_where(self, predicate: Callable[[K], bool]) -> None:
        """Remove every entry whose key satisfies ``predicate``."""
        for key in [key for key in self._items if predicate(key)]:
            del self._items[key]
