"""Workspace snapshots kept beside the loop-state store, shared by every scope that saw them.

A scope's state names the snapshot it last saw by its key (a digest of its
packed form) rather than carrying it: a snapshot of 20,000 files takes about a
megabyte, more than a size-bounded store keeps for a whole session, and scopes
of one workspace mostly see the same snapshot.  The keeper holds the few most
recent snapshots; one it no longer holds reads as None (the sweep then takes the
files modified since the command started for what it changed).

- ``MemorySnapshots``: in this process (a guard's own, or a store's for every
  guard sharing it).
- ``FolderSnapshots``: one file per snapshot in a private folder (the
  ``FileStore``'s), for hook processes that answer one event each; a file
  whose content does not match its name reads as missing, and a folder that
  cannot be written keeps the snapshot in memory only (logged).
- ``policy.stores.redis.RedisSnapshots``: in Redis, for the workers of a gateway.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Protocol

from policy.resources import private_folder
from policy.runtime.workspace.snapshot import Snapshot
from policy.stores.lru import LruDict

KEPT_IN_MEMORY = 8
"""Snapshots a process keeps in memory (a few workspaces, or a few recent states of one)."""
KEPT_IN_FOLDER = 64
"""Snapshot files a folder keeps; the least recently used go first."""
MAX_SNAPSHOT_BYTES = 64 << 20
"""A snapshot file larger than this is not read (one of ``DEFAULT_MAX_FILES`` files takes ~1 MB)."""
log = logging.getLogger("policy.guard")
_SUFFIX = ".snap"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class SnapshotKeeper(Protocol):
    """Where the guard keeps the snapshots its scopes name."""

    def put(self, snapshot: Snapshot) -> str:
        """Keep ``snapshot``; its key."""

    def get(self, key: str) -> Snapshot | None:
        """The snapshot of ``key``; None when it is no longer kept."""

    def has(self, key: str) -> bool:
        """Whether ``get(key)`` would find it (cheaper than reading it)."""


def snapshot_key(packed: bytes) -> str:
    return hashlib.blake2b(packed, digest_size=16).hexdigest()


class MemorySnapshots:
    """The ``limit`` most recently used snapshots, in this process.  Thread-safe."""

    def __init__(self, limit: int = KEPT_IN_MEMORY) -> None:
        self._kept: LruDict[str, Snapshot] = LruDict(limit)
        self._lock = threading.Lock()

    def put(self, snapshot: Snapshot) -> str:
        key = snapshot_key(snapshot.to_bytes())
        self.keep(key, snapshot)
        return key

    def keep(self, key: str, snapshot: Snapshot) -> None:
        with self._lock:
            self._kept.put(key, snapshot)

    def get(self, key: str) -> Snapshot | None:
        with self._lock:
            return self._kept.get(key)

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._kept


class BackedSnapshots:
    """Snapshots kept somewhere outside this process (``save``/``load``/``exists``), the recent ones
    also in memory.  A backend fault is not raised: a snapshot that could not be saved stays in memory
    only (logged), one that cannot be loaded, or does not match its key, is missing."""

    where = "its backing store"

    def __init__(self) -> None:
        self._memory = MemorySnapshots()

    def put(self, snapshot: Snapshot) -> str:
        packed = snapshot.to_bytes()
        key = snapshot_key(packed)
        self._memory.keep(key, snapshot)
        try:
            self.save(key, packed)
        except Exception as err:
            log.warning("could not keep a workspace snapshot in %s (%s); it stays in memory only",
                        self.where, err)
        return key

    def get(self, key: str) -> Snapshot | None:
        kept = self._memory.get(key)
        if kept is not None:
            return kept
        try:
            packed = self.load(key)
            if packed is None or snapshot_key(packed) != key:
                return None
            snapshot = Snapshot.from_bytes(packed)
        except Exception:
            return None
        self._memory.keep(key, snapshot)
        return snapshot

    def has(self, key: str) -> bool:
        try:
            return self._memory.has(key) or self.exists(key)
        except Exception:
            return False

    def save(self, key: str, packed: bytes) -> None:
        raise NotImplementedError

    def load(self, key: str) -> bytes | None:
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError


class FolderSnapshots(BackedSnapshots):
    """Snapshots as files ``<key>.snap`` in ``folder`` (created private)."""

    def __init__(self, folder: Path, *, limit: int = KEPT_IN_FOLDER) -> None:
        super().__init__()
        self.folder = folder
        self.where = str(folder)
        self.limit = limit
        self._checked = False

    def save(self, key: str, packed: bytes) -> None:
        path = self._path(key)
        try:
            os.utime(path, follow_symlinks=False)  # kept already: now the most recently used
        except FileNotFoundError:
            self._write(path, packed)
            self._prune()

    def load(self, key: str) -> bytes | None:
        return self._read(self._path(key))

    def exists(self, key: str) -> bool:
        return os.path.lexists(self._path(key))

    def _path(self, key: str) -> Path:
        if not self._checked:
            private_folder(self.folder)
            self._checked = True
        return self.folder / f"{key}{_SUFFIX}"

    def _write(self, path: Path, packed: bytes) -> None:
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(16).hex()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(packed)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)

    def _read(self, path: Path) -> bytes | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
        except OSError:
            return None
        try:
            if os.fstat(fd).st_size > MAX_SNAPSHOT_BYTES:
                return None
            chunks: list[bytes] = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)

    def _prune(self) -> None:
        """Remove the least recently used snapshot files beyond ``limit``."""
        kept: list[tuple[float, Path]] = []
        for path in self.folder.iterdir():
            with contextlib.suppress(OSError):
                if path.suffix == _SUFFIX:
                    kept.append((path.lstat().st_mtime, path))
        kept.sort()
        for _, path in kept[: max(0, len(kept) - self.limit)]:
            path.unlink(missing_ok=True)
