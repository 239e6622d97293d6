"""A workspace snapshot: the covered files' paths, sizes and change times, packed.

A snapshot is what the sweep compares: the paths of the files it covers
(sorted, relative, ``/``-separated) and, for each, its size, modification
time and status-change time in nanoseconds, packed into one ``bytes``
(24 bytes a file).  Two snapshots of an unchanged workspace compare with two
``==``; only when they differ are the changed entries looked for.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass

RECORD = struct.Struct("<3q")
"""One file's size, modification time and status-change time (ns)."""
BLOCK_RECORDS = 64

FileStat = tuple[str, int, int, int]
"""A listed file: relative path, size, mtime_ns, ctime_ns (0 when the lister cannot tell)."""


@dataclass(frozen=True, slots=True)
class Changes:
    """What differs between two snapshots, by path."""

    created: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.created or self.modified or self.deleted)

    @property
    def changed(self) -> tuple[str, ...]:
        """The files that exist after: created or modified, in path order."""
        return tuple(sorted(self.created + self.modified))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The covered files of a workspace at one moment."""

    paths: tuple[str, ...] = ()
    stats: bytes = b""
    truncated: bool = False
    """The walk stopped at the file limit: files beyond it are not covered."""

    @classmethod
    def of(cls, files: Iterable[FileStat], *, truncated: bool = False) -> Snapshot:
        ordered = sorted(files)
        stats = b"".join(RECORD.pack(size, mtime, ctime) for _, size, mtime, ctime in ordered)
        return cls(tuple(entry[0] for entry in ordered), stats, truncated)

    def __len__(self) -> int:
        return len(self.paths)

    def stat(self, path: str) -> tuple[int, int, int] | None:
        """(size, mtime_ns, ctime_ns) of ``path``; None when the snapshot does not cover it."""
        at = bisect_left(self.paths, path)
        if at == len(self.paths) or self.paths[at] != path:
            return None
        size, mtime, ctime = RECORD.unpack_from(self.stats, at * RECORD.size)
        return size, mtime, ctime

    def changes(self, after: Snapshot) -> Changes:
        """What ``after`` (a later snapshot) created, modified and deleted."""
        if after.paths == self.paths:
            if after.stats == self.stats:
                return Changes()
            return Changes(modified=tuple(self._differing(after)))
        return self._merge(after)

    def _differing(self, after: Snapshot) -> list[str]:
        """The paths whose records differ (same paths): blocks of records compared whole, and only
        the records of a differing block one by one."""
        width = RECORD.size
        block = BLOCK_RECORDS * width
        before, now = self.stats, after.stats
        found: list[str] = []
        for start in range(0, len(before), block):
            end = start + block
            if before[start:end] == now[start:end]:
                continue
            for offset in range(start, min(end, len(before)), width):
                if before[offset : offset + width] != now[offset : offset + width]:
                    found.append(self.paths[offset // width])
        return found

    def _merge(self, after: Snapshot) -> Changes:
        created: list[str] = []
        modified: list[str] = []
        deleted: list[str] = []
        mine = dict(zip(self.paths, _records(self.stats), strict=True))
        for path, record in zip(after.paths, _records(after.stats), strict=True):
            previous = mine.pop(path, None)
            if previous is None:
                created.append(path)
            elif previous != record:
                modified.append(path)
        deleted.extend(mine)
        return Changes(tuple(created), tuple(modified), tuple(sorted(deleted)))

    def replaced(self, path: str, stat: tuple[int, int, int] | None) -> Snapshot:
        """This snapshot with one file's entry set (None: removed)."""
        entries = {p: RECORD.unpack(r) for p, r in zip(self.paths, _records(self.stats), strict=True)}
        if stat is None:
            entries.pop(path, None)
        else:
            entries[path] = stat
        return Snapshot.of(((p, *s) for p, s in entries.items()), truncated=self.truncated)

    def with_changes_since(self, since_ns: int) -> Snapshot:
        """What stands for a "before" no longer kept: this snapshot with every file modified or
        status-changed at ``since_ns`` or later given an entry no file has (size -1), so each reads
        as modified, with no history of its own."""
        entries = []
        for path, record in zip(self.paths, _records(self.stats), strict=True):
            size, mtime, ctime = RECORD.unpack(record)
            entries.append((path, -1, 0, 0) if max(mtime, ctime) >= since_ns else (path, size, mtime, ctime))
        return Snapshot.of(entries, truncated=self.truncated)

    def to_bytes(self) -> bytes:
        """The snapshot packed: a header line (``S1``, truncated 0/1, the paths' byte length), the
        paths one a line, then the stats."""
        names = "\n".join(self.paths).encode("utf-8", "surrogateescape")
        return b"S1 %d %d\n" % (int(self.truncated), len(names)) + names + self.stats

    @classmethod
    def from_bytes(cls, data: bytes) -> Snapshot:
        """Parse ``to_bytes`` output; anything else raises ``ValueError``."""
        header, newline, rest = data.partition(b"\n")
        parts = header.split(b" ")
        if not newline or len(parts) != 3 or parts[0] != b"S1" or parts[1] not in (b"0", b"1") \
                or not parts[2].isdigit():
            raise ValueError("not a packed snapshot")
        size = int(parts[2])
        names = tuple(rest[:size].decode("utf-8", "surrogateescape").split("\n")) if size else ()
        stats = rest[size:]
        if len(rest) < size or len(stats) != len(names) * RECORD.size or list(names) != sorted(names):
            raise ValueError("snapshot paths and stats do not agree")
        return cls(names, stats, parts[1] == b"1")


def _records(stats: bytes) -> list[bytes]:
    width = RECORD.size
    return [stats[offset : offset + width] for offset in range(0, len(stats), width)]
