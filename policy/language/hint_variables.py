"""The hint variables each kind of rule provides beyond the common ones, the one list of them.

The common variables, and the mapping the guard renders with, are
``policy.model.variables``; a loop kind's variables are its module's
(``policy.language.loops``).  The compiler offers a template exactly the
common variables and its rule kind's (``policy.language.compiler``), and
``docs/hints.md`` documents exactly these (``tests/test_hint_snapshots.py``
holds it to that).
"""

from __future__ import annotations

from collections.abc import Mapping

from policy.language.loops import LOOP_KINDS

RULE_VARIABLES: Mapping[str, frozenset[str]] = {
    "gate": frozenset({"path", "line", "column", "message", "snippet", "validator", "language", "output"}),
    "signature": frozenset({"signature", "captures", "excerpt", "output", "status", "module_origin"}),
    **{name: kind.variables for name, kind in LOOP_KINDS.items()},
    "sweep": frozenset({"path", "line", "column", "message", "snippet", "validator", "language", "output",
                        "command", "created"}),
    "incomplete": frozenset({"path", "line", "column", "snippet", "where", "validator"}),
}
"""The variables each kind of rule adds (signatures add their named groups too)."""
