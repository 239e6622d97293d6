"""Whether to colour output: only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""

from __future__ import annotations

import os
import sys


def color_enabled(*, err: bool = False) -> bool:
    """Colour for standard output (``err``: standard error): a terminal, and ``NO_COLOR`` unset or empty."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = sys.stderr if err else sys.stdout
    return stream is not None and stream.isatty()
