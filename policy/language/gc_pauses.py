"""Fewer full garbage collections while a policy is checked and compiled.

A check builds its syntax tree, declarations and compiled rules in one go
and keeps them until it ends, so none of it is garbage; still, each full
collection visits all of it, and CPython runs one whenever the objects that
survived since the last one reach a quarter of the rest.  A 5 MB policy
(1.4 million objects) paid for ten of them: 3.3-3.8 s of an 11 s check
(``bench/bench_lint_large.py``'s policy, load 4).  Inside
``fewer_full_collections`` the oldest generation's threshold is raised
through the ``gc`` module's public API: young collections run as before
(garbage made meanwhile is still freed), and the thresholds are put back
when the last check running in the process ends, unless someone else
changed them in the meantime.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

DEFERRED_THRESHOLD = 1_000_000
"""The oldest generation's threshold during a check: young collections before a full one."""

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] = (0, 0, 0)
_deferred: tuple[int, int, int] = (0, 0, 0)


@contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Defer full collections for the duration; nested and concurrent uses share one deferral."""
    global _active, _saved, _deferred
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            _deferred = (_saved[0], _saved[1], max(_saved[2], DEFERRED_THRESHOLD))
            gc.set_threshold(*_deferred)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and gc.get_threshold() == _deferred:
                gc.set_threshold(*_saved)
