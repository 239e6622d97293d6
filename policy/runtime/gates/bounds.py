"""Size bounds of the write gates: what may be read, built and checked.

A write gate reads the file a call names and builds the text the call would
leave; both are the agent's to choose.  Nothing larger than the policy's
``max_check_bytes`` is read, built or checked: such a call is let through
unchecked and its decision says so.  Only regular files are read (a device,
FIFO or socket reads as absent), opened without blocking and measured before
a byte is read.
"""

from __future__ import annotations

import os
import stat

DEFAULT_MAX_CHECK_BYTES = 2 * 1024 * 1024
"""The default of a policy's ``max_check_bytes``."""
MAX_EDITS = 1000
"""The most edits of one multi-edit call a gate applies."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class TooLarge(Exception):
    """A text a gate would read or build exceeds its bound; the message says which and why."""


def text_bytes(text: str) -> int:
    """The UTF-8 size of a text (lone surrogates count as three bytes, as they are kept)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def check_size(text: str, limit: int, what: str) -> str:
    """``text`` unchanged; raises :class:`TooLarge` when it is larger than ``limit`` bytes."""
    if len(text) > limit or text_bytes(text) > limit:
        raise TooLarge(f"{what} is larger than max_check_bytes ({limit} bytes)")
    return text


def read_local_file(path: str, limit: int = DEFAULT_MAX_CHECK_BYTES) -> str | None:
    """A regular local file's text (undecodable bytes kept as surrogates); None when it is missing,
    unreadable or not a regular file.  Raises :class:`TooLarge` past ``limit`` bytes, unread."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > limit:
            raise TooLarge(f"{path} is larger than max_check_bytes ({limit} bytes)")
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    if size > limit:  # it grew after it was measured
        raise TooLarge(f"{path} is larger than max_check_bytes ({limit} bytes)")
    return b"".join(chunks).decode("utf-8", "surrogateescape")
