"""A file-backed ``Store`` for hook processes: the guard's state outlives each process.

A command hook (Claude Code) runs one process per event, so loop history and
pending warnings must live on disk between events.  One JSON file per thread
(a Claude Code session) holds the serialised ``ScopeState`` of each of its
runs, under the per-user state folder.

- Two processes never lose an update: a scope is read, changed and written
  under an exclusive ``flock`` of the session file.  Writes replace the file
  atomically (a crash leaves the old file, never half of a new one), and a
  process that waited for the lock checks that the path still names the file
  it locked; if the file was replaced or removed meanwhile, it locks the
  current one instead.
- Bounded: at most ``max_sessions`` session files (the least recently used
  go first), at most ``max_file_bytes`` per file (a file over the limit loses
  its least recently used runs, then undelivered warnings), at most
  ``max_pending`` undelivered warnings per run.
- Stale sessions expire: a file untouched for ``ttl`` seconds reads as empty,
  and such files are removed whenever a new session file is created.
- A run whose state alone is over the limit loses its workspace memory first,
  and only then starts afresh; an unreadable run starts afresh too.  Either way
  the state says so (``ScopeState.restarted``), and so does the event's decision.
- A lock held longer than ``lock_wait`` seconds (a process stuck, or stopped,
  while it holds the file) is not waited for: ``scope()`` raises ``StoreBusyError``,
  which costs that event its loop counting, never its answer.
- Workspace snapshots, which a run's state names by key, are kept as files of
  their own in ``snapshots/`` (``policy.runtime.workspace.kept``).

- Nothing can be planted: the folder is used only when it is the user's own
  and no one else may write it, session files are never opened through a
  symlink, and text UTF-8 cannot encode (lone surrogates) is kept as JSON
  escapes rather than failing the save.

POSIX only (``fcntl``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from policy.model.events import Scope
from policy.resources import private_folder, user_state_dir
from policy.runtime.loops.state import ScopeState, drop_oldest
from policy.runtime.workspace.kept import FolderSnapshots
from policy.runtime.workspace.state import WorkspaceState

log = logging.getLogger("policy.stores")

FORMAT_VERSION = 1
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
"""A session file is never opened through a symlink (one planted in the folder would aim the lock
and the write at another file)."""
_SUFFIX = ".json"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")

_LOCK_POLL_SECONDS = 0.01
Runs = dict[str, str]
"""Run id → ``ScopeState.to_json()``, least recently used first."""


class StoreBusyError(TimeoutError):
    """A session file stayed locked by another process for longer than the store waits."""


class FileStore:
    """Scope state in one JSON file per thread; safe across processes and threads."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        max_sessions: int = 500,
        max_file_bytes: int = 256 * 1024,
        max_pending: int = 100,
        ttl: float = 24 * 3600,
        lock_wait: float = 2.0,
    ) -> None:
        if max_sessions < 1 or max_file_bytes < 1024 or max_pending < 0 or ttl <= 0 or lock_wait < 0:
            raise ValueError("FileStore limits must be positive (max_file_bytes at least 1024)")
        self._directory = Path(directory) if directory is not None else None
        self._checked = False
        self.max_sessions = max_sessions
        self.max_file_bytes = max_file_bytes
        self.max_pending = max_pending
        self.ttl = ttl
        self.lock_wait = lock_wait
        self._snapshots: FolderSnapshots | None = None

    @property
    def directory(self) -> Path:
        """The session folder, created 0700 on first use; raises ``UnsafeFolder`` (an ``OSError``)
        when another user owns it or others may write it."""
        if self._directory is None:
            self._directory = user_state_dir() / "sessions"
        if not self._checked:
            private_folder(self._directory)
            self._checked = True
        return self._directory

    # --- the Store protocol -----------------------------------------------------

    @contextlib.contextmanager
    def scope(self, scope: Scope) -> Iterator[ScopeState]:
        """Exclusive access to one scope's state; changes are saved when the block ends normally."""
        path = self.path_for(scope.thread_id)
        created = not path.exists()
        with self._run_state(path, str(scope.run_id), create=True) as state:
            assert state is not None
            yield state
        if created:
            self.sweep()

    @contextlib.contextmanager
    def existing(self, scope: Scope) -> Iterator[ScopeState | None]:
        """``scope()`` for a run that has state; None for one that has none (nothing is written)."""
        with self._run_state(self.path_for(scope.thread_id), str(scope.run_id), create=False) as state:
            yield state

    def snapshots(self) -> FolderSnapshots:
        """The workspace snapshots the runs' states name, in ``snapshots/`` beside the session files."""
        if self._snapshots is None:
            self._snapshots = FolderSnapshots(self.directory / "snapshots")
        return self._snapshots

    def drop_thread(self, thread_id: str) -> None:
        """Forget every run of a thread (its file is removed)."""
        self._remove(self.path_for(thread_id))

    def drop_all(self) -> None:
        """Forget every thread (every session file is removed)."""
        for path in self._session_files():
            self._remove(path)

    def __len__(self) -> int:
        """How many run scopes the live (unexpired) session files hold."""
        total = 0
        for path in self._session_files():
            with contextlib.suppress(OSError):
                if not self._expired(path.stat().st_mtime):
                    total += len(_parse_runs(path.read_bytes(), path)[0])
        return total

    # --- housekeeping -----------------------------------------------------------

    def path_for(self, thread_id: str) -> Path:
        """The session file of a thread: its id when that is a safe file name, else a digest of it."""
        if _SAFE_NAME.fullmatch(thread_id):
            return self.directory / f"s-{thread_id}{_SUFFIX}"
        digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / f"h-{digest}{_SUFFIX}"

    def sweep(self) -> None:
        """Remove expired session files, then the least recently used beyond ``max_sessions``,
        and temporary files left by crashed writers.  Files in use are skipped."""
        now = time.time()
        live: list[tuple[float, Path]] = []
        for path in self._session_files():
            with contextlib.suppress(FileNotFoundError):
                mtime = path.stat().st_mtime
                if self._expired(mtime, now):
                    self._remove_if_idle(path)
                else:
                    live.append((mtime, path))
        live.sort()
        for _, path in live[: max(0, len(live) - self.max_sessions)]:
            self._remove_if_idle(path)
        for temporary in self.directory.glob(".*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                if self._expired(temporary.stat().st_mtime, now):
                    temporary.unlink()

    # --- implementation ---------------------------------------------------------

    @contextlib.contextmanager
    def _run_state(self, path: Path, run_id: str, *, create: bool) -> Iterator[ScopeState | None]:
        """One run's state in the session file ``path``, locked, and saved when the block ends
        normally; without ``create``, None (and nothing written) when the file or the run has none."""
        with self._locked(path, create=create) as fd:
            runs, problem = self._read(fd, path) if fd is not None else ({}, None)
            stored = runs.pop(run_id, None)
            if stored is None and not create:
                yield None
                return
            assert fd is not None
            state = _parse_state(stored, path)
            if problem is not None and state.restarted is None:
                state.restarted = problem
            yield state
            runs[run_id] = self._fitted_state(state)
            self._write(path, self._fitted(runs, run_id, state))

    @contextlib.contextmanager
    def _locked(self, path: Path, *, create: bool) -> Iterator[int | None]:
        """An exclusively locked descriptor of the file ``path`` names now (None: no such file)."""
        flags = os.O_RDWR | _NOFOLLOW | (os.O_CREAT if create else 0)
        while True:
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:
                yield None
                return
            try:
                self._lock(fd, path)
                if _same_file(fd, path):
                    yield fd
                    return
            finally:
                os.close(fd)

    def _lock(self, fd: int, path: Path) -> None:
        """``flock`` the descriptor, waiting at most ``lock_wait`` seconds (else ``StoreBusyError``)."""
        deadline = time.monotonic() + self.lock_wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreBusyError(f"{path} stayed locked for more than {self.lock_wait:g}s") from None
                time.sleep(_LOCK_POLL_SECONDS)

    def _read(self, fd: int, path: Path) -> tuple[Runs, str | None]:
        """The file's runs, and why they were dropped when it could not be read (else None)."""
        if self._expired(os.fstat(fd).st_mtime):
            return {}, None
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return _parse_runs(b"".join(chunks), path)

    def _write(self, path: Path, runs: Runs) -> None:
        data = json.dumps({"v": FORMAT_VERSION, "runs": runs}, ensure_ascii=True, separators=(",", ":"))
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(16).hex()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data.encode("ascii"))
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)

    def _fitted_state(self, state: ScopeState) -> str:
        """The state's JSON, with the oldest undelivered warnings over ``max_pending`` dropped."""
        drop_oldest(state.pending, self.max_pending)
        return state.to_json()

    def _fitted(self, runs: Runs, current: str, state: ScopeState) -> Runs:
        """``runs`` within ``max_file_bytes``: drop the least recently used runs, then the current
        run's pending warnings, then what it knows about the workspace's files, and as a last resort
        start it afresh (``state.restarted`` says why)."""
        while _size(runs) > self.max_file_bytes and len(runs) > 1:
            oldest = next(iter(runs))
            log.warning("%s: session state over %d bytes; dropping run %s", self.directory,
                        self.max_file_bytes, oldest)
            del runs[oldest]
        if _size(runs) <= self.max_file_bytes:
            return runs
        state.pending.clear()
        runs[current] = state.to_json()
        if _size(runs) > self.max_file_bytes:
            state.files = WorkspaceState()
            runs[current] = state.to_json()
            state.restarted = (f"the run's state exceeds {self.max_file_bytes} bytes; what it knew about "
                               "the workspace's files starts afresh")
            log.warning("%s: run %s over %d bytes; its workspace state starts afresh", self.directory,
                        current, self.max_file_bytes)
        if _size(runs) > self.max_file_bytes:
            log.warning("%s: run %s alone exceeds %d bytes; its state starts afresh", self.directory,
                        current, self.max_file_bytes)
            runs[current] = ScopeState().to_json()
            state.restarted = f"the run's state exceeds {self.max_file_bytes} bytes; it starts afresh"
        return runs

    def _remove(self, path: Path) -> None:
        """Remove a session file once no process holds it."""
        with self._locked(path, create=False) as fd:
            if fd is not None:
                path.unlink(missing_ok=True)

    def _session_files(self) -> list[Path]:
        return [p for p in self.directory.glob(f"*{_SUFFIX}") if p.name[:2] in ("s-", "h-")]

    def _expired(self, mtime: float, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) - mtime > self.ttl

    def _remove_if_idle(self, path: Path) -> None:
        """Remove a session file unless a process holds it right now."""
        try:
            fd = os.open(path, os.O_RDWR | _NOFOLLOW)
        except (FileNotFoundError, OSError):
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(fd, path):
                path.unlink()
        except BlockingIOError:
            pass
        finally:
            os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino)


def _size(runs: Runs) -> int:
    return len(json.dumps(runs, ensure_ascii=True, separators=(",", ":")).encode("utf-8")) + 16


def _parse_runs(data: bytes, path: Path) -> tuple[Runs, str | None]:
    """A session file's runs; an empty, corrupt or foreign file reads as no runs (and says why)."""
    if not data:
        return {}, None
    try:
        document: Any = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        log.warning("%s: unreadable session state; starting afresh", path)
        return {}, "the session's state file was unreadable; it starts afresh"
    known = isinstance(document, dict) and document.get("v") == FORMAT_VERSION
    runs = document.get("runs") if known else None
    if not isinstance(runs, dict):
        log.warning("%s: session state in an unknown format; starting afresh", path)
        return {}, "the session's state file was in an unknown format; it starts afresh"
    return {str(run): state for run, state in runs.items() if isinstance(state, str)}, None


def _parse_state(text: str | None, path: Path | None) -> ScopeState:
    if text is None:
        return ScopeState()
    try:
        return ScopeState.from_json(text)
    except ValueError as err:
        log.warning("%s: %s; starting the run afresh", path, err)
        return ScopeState(restarted=f"the run's stored state was unreadable ({err}); it starts afresh")
