"""Linux's inotify: which watched folders had an entry created, changed or removed since the last look.

A watch on a folder reports what happens to the entries in it: a file
created, written, truncated, its times or mode set (``touch -r``, ``cp -p``),
an entry removed or renamed, and the folder itself removed or renamed.  The
kernel queues each event when the change is made, so once a command has
returned, its changes are in the queue.  Events for one file reach only the
folder it was changed through: a change made through a hard link elsewhere,
to a symbolic link's target, through a memory map, or by another machine on
a network file system is not reported.  ``Notifier()`` raises ``OSError``
where inotify is missing or its per-user limits are reached.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ctypes

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

FOLDER_EVENTS = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
                 | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
"""The watched folder itself was removed or renamed (its watch no longer means its path)."""
EVENT = struct.Struct("iIII")
"""wd, mask, cookie, length of the name that follows."""
READ_BYTES = 1 << 16


@dataclass(frozen=True, slots=True)
class Events:
    """What the queue held: the watches whose folder had an entry change, those whose folder is gone,
    and whether the kernel dropped events (then nothing can be known from them)."""

    changed: frozenset[int] = frozenset()
    gone: frozenset[int] = frozenset()
    overflowed: bool = False

    def __bool__(self) -> bool:
        return bool(self.changed or self.gone or self.overflowed)


class Notifier:
    """One inotify instance: a non-blocking queue of events for the folders it watches."""

    def __init__(self) -> None:
        self._add, self._remove = _functions()
        init = _libc().inotify_init1
        fd = init(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise _error()
        self._fd: int | None = fd
        self._close = weakref.finalize(self, os.close, fd)
        self.pid = os.getpid()
        """The process that made it (a forked child shares its queue, so must make its own)."""

    def watch(self, path: str) -> int:
        """Watch a folder (the same watch again for a folder already watched); raises ``OSError``."""
        if self._fd is None:
            raise OSError(errno.EBADF, "the notifier is closed")
        wd = self._add(self._fd, os.fsencode(path), FOLDER_EVENTS)
        if wd < 0:
            raise _error()
        return int(wd)

    def unwatch(self, wd: int) -> None:
        if self._fd is not None:
            self._remove(self._fd, wd)

    def events(self) -> Events:
        """Everything queued since the last call (never waits)."""
        if self._fd is None:
            return Events(overflowed=True)
        changed: set[int] = set()
        gone: set[int] = set()
        overflowed = False
        while True:
            try:
                data = os.read(self._fd, READ_BYTES)
            except BlockingIOError:
                break
            except OSError:
                overflowed = True
                break
            at = 0
            while at + EVENT.size <= len(data):
                wd, mask, _, length = EVENT.unpack_from(data, at)
                at += EVENT.size + length
                if mask & IN_Q_OVERFLOW:
                    overflowed = True
                elif mask & GONE and not length:
                    gone.add(wd)
                else:
                    changed.add(wd)
        return Events(frozenset(changed), frozenset(gone), overflowed)

    def close(self) -> None:
        """Stop every watch (the kernel drops them with the descriptor)."""
        self._fd = None
        self._close()


def _libc() -> ctypes.CDLL:
    """The process's C library (ctypes is imported only by a workspace that starts watching)."""
    if not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, "inotify is Linux's")
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _functions() -> tuple[Callable[[int, bytes, int], int], Callable[[int, int], int]]:
    import ctypes

    libc = _libc()
    try:
        add: Any = libc.inotify_add_watch
        remove: Any = libc.inotify_rm_watch
    except AttributeError:
        raise OSError(errno.ENOSYS, "this C library has no inotify") from None
    add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
    remove.argtypes = (ctypes.c_int, ctypes.c_int)
    return add, remove


def _error() -> OSError:
    import ctypes

    code = ctypes.get_errno()
    return OSError(code, os.strerror(code))
