"""The library's warnings on standard error, for every command but ``hook``.

``policy`` logs what it ignored or could not do (a cache folder others can
write, a grammar cache it could not save) at WARNING and attaches no
handler of its own; the commands show those records as
``policyctl: warning: …`` lines.  ``hook`` reports its faults inside its
reply instead (:mod:`policy.hooks.respond`).
"""

from __future__ import annotations

import logging

import click


class _StderrHandler(logging.Handler):
    """Writes each record as one line to the current standard error (click's, so tests capture it)."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        click.echo(f"policyctl: {record.levelname.lower()}: {message}", err=True)


_HANDLER = _StderrHandler(logging.WARNING)


def show_library_warnings() -> None:
    """Route the ``policy`` logger's warnings and errors to standard error (once per process)."""
    logging.getLogger("policy").addHandler(_HANDLER)  # adding the same handler twice is a no-op
