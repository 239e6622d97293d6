"""The loop kinds a ``loop`` declaration can name, registered once.

Each kind is one module here holding its ``LoopKind`` (``kind.py``): its
block's settings, its hint variables and how it compiles to its rule.  The
schema offers exactly these names and settings, the compiler builds each
declaration with its kind, and the hint check offers each kind's variables.
(The runtime's layers are ``policy.runtime.loops.layers``.)
"""

from __future__ import annotations

from policy.language.loops import error_streak, frequency, oscillation, repeat
from policy.language.loops.kind import LoopKind

LOOP_KINDS: dict[str, LoopKind] = {
    kind.name: kind for kind in (repeat.KIND, frequency.KIND, error_streak.KIND, oscillation.KIND)
}
"""Kind name → its ``LoopKind``, in the order ``docs/language.md`` lists them."""
