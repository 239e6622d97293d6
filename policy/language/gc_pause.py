"""Hold off Python's cyclic garbage collector while a policy's objects are built.

Reading and compiling a policy allocates tens of thousands of objects that
all stay alive.  With the collector on, those allocations trigger collections
that walk the whole heap again and again: on a 2,000-line policy they cost
as much as the Lark parse itself.  Whatever cycles the work leaves behind are
collected after it.
"""

from __future__ import annotations

import gc
import threading
from contextlib import AbstractContextManager


class _CollectorPause:
    """Nested and concurrent holders share one pause; the last one out restores the previous state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._holders += 1

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._was_enabled:
                gc.enable()


_PAUSE = _CollectorPause()


def collector_paused() -> AbstractContextManager[None]:
    """``with collector_paused(): …`` runs the block with the cyclic collector held off."""
    return _PAUSE
