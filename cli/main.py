"""Entry point of the ``policyctl`` script.

``policyctl hook claude-code`` runs on every tool call of a Claude Code
session, so it is dispatched before click (or anything of ``policy``) is
imported: :mod:`cli.hook_client` forwards the event to the resident process
(or answers it itself).  Every other command goes through the click group
in :mod:`cli.commands`.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    """Run ``policyctl`` with ``sys.argv``."""
    from cli.hook_client import main as run

    sys.exit(run(sys.argv[1:]))


def __getattr__(name: str) -> Any:
    """``cli.main.policyctl``: the click group, imported on first use."""
    if name == "policyctl":
        from cli.commands import policyctl

        return policyctl
    raise AttributeError(f"module 'cli.main' has no attribute {name!r}")


if __name__ == "__main__":
    main()
