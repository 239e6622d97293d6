"""A workspace on the local disk: a fast walk of its covered files, and its files' text.

The walk skips version-control folders, virtual environments (any folder
holding a ``pyvenv.cfg``), ``node_modules``, caches, and what ``.gitignore``
files (and ``.git/info/exclude``) exclude.  It remembers each folder's
covered files and subfolders, and how to find out that they may have changed:

- by the folder's modification time, which changes whenever an entry is added,
  removed or renamed in it (not when a file in it is written in place): an
  unchanged folder is not listed again, but each covered file is stat'ed on
  every walk.  A folder modified within ``RACY_NS`` of a walk is listed again
  next time (its time may not yet show a change made in the same clock tick).
- from the second walk on, where the system offers it (Linux's inotify,
  ``notify``), by a watch on each folder walked: a folder none of whose
  entries changed since the last walk keeps its listing and its files'
  stats, so a walk of an unchanged workspace costs no ``stat`` at all, and a
  walk after a command stats only the folders it touched and their covered
  files.  A folder holding a symbolic link to a file is stat'ed on every walk
  (its target may change elsewhere).  What a watch cannot see (a change made
  through a hard link outside the folder, through a memory map, or by
  another machine on a network file system) a walk sees only once the
  folder changes again; with ``notify=False``, or when the system refuses a
  watch, every walk stats every covered file.
"""

from __future__ import annotations

import errno
import os
import posixpath
import sys
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

from policy.runtime.gates.bounds import DEFAULT_MAX_CHECK_BYTES, TooLarge, read_local_file
from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.ignore import IgnoreFile, IgnoreStack
from policy.runtime.workspace.notify import Notifier
from policy.runtime.workspace.snapshot import RECORD, Snapshot

DEFAULT_MAX_FILES = 20_000
ENTRIES_PER_FILE = 10
"""A walk also stops after listing this many entries per covered file it may hold."""
RACY_NS = 50_000_000
SKIPPED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", ".jj", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".eggs", ".direnv", "site-packages",
    "dist-packages",
})
VENV_MARKER = "pyvenv.cfg"
GITIGNORE = ".gitignore"
EXCLUDE_FILE = ".git/info/exclude"
IGNORE_FILE_LIMIT = 1 << 20
"""A ``.gitignore`` larger than this is not read (its rules do not apply)."""
GIT_TIMEOUT = 5.0
NO_WATCH = -1
RELIST = -1
"""The modification time of a folder listed again on the next walk."""

Run = tuple[str, ...]
"""Covered files of one folder that come one after another in path order (paths relative to the root)."""
_FIELDS = attrgetter("st_size", "st_mtime_ns", "st_ctime_ns")


@dataclass(slots=True)
class _Folder:
    """What a walk found in one folder."""

    mtime: int
    parts: tuple[str | Run, ...]
    """Its subfolders to walk (``name/``, relative to the root) and runs of covered files, in path order."""
    entries: int
    rules: IgnoreFile | None
    rules_stat: tuple[int, int] | None
    links: bool
    """It holds a symbolic link to a file, whose target may change where no watch on it sees."""
    wd: int = NO_WATCH
    """Its watch: while no event arrives for it, ``stats`` are current."""
    stats: tuple[bytes, ...] = ()
    """Each run's packed stats (``Snapshot``'s records) as the last walk found them."""

    subtree: _Subtree | None = None
    """Every covered file below it, while it and every folder below it are watched and quiet."""

    def subfolders(self) -> set[str]:
        return {part for part in self.parts if isinstance(part, str)}


@dataclass(frozen=True, slots=True)
class _Subtree:
    """The covered files of a folder and all below it, as a walk gives them."""

    paths: Run
    stats: bytes
    entries: int
    """Entries listed in it (what it costs of a walk's budget)."""


@dataclass(frozen=True, slots=True)
class _Close:
    """Where a folder's subtree began in a walk's output: at its end, the subtree is kept if no
    folder in it was unwatched."""

    folder: _Folder
    paths: int
    chunks: int
    budget: int
    unwatched: int


class LocalWorkspace:
    """The files under ``root``.  Thread-safe; one instance may serve many scopes.

    ``notify``: watch the walked folders (from the second walk on) where the system can.
    """

    local_clock = True

    def __init__(self, root: str | os.PathLike[str], *, max_files: int = DEFAULT_MAX_FILES,
                 max_bytes: int = DEFAULT_MAX_CHECK_BYTES, notify: bool = True) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.max_files = max_files
        self.max_bytes = max_bytes
        """The largest file ``read`` reads (the policy's ``max_check_bytes``)."""
        self._lock = threading.Lock()
        self._folders: dict[str, _Folder] = {}
        self._coverage: Coverage | None = None
        self._exclude_stat: tuple[int, int] | None = None
        self._exclude_rules = IgnoreStack()
        self._notify = notify
        self._notifier: Notifier | None = None
        self._watched: dict[int, str] = {}
        """Watch → the folder (relative to the root) it was made for."""
        self._changed: set[str] = set()
        """Watched folders an event came from since the last walk."""
        self._last: Snapshot | None = None
        """The last walk's snapshot, while every folder it walked is watched and quiet."""
        self._walks = 0

    def __repr__(self) -> str:
        return f"LocalWorkspace({self.root!r})"

    @property
    def watching(self) -> bool:
        """Whether the walked folders are watched (so an unchanged one costs no ``stat``)."""
        return self._notifier is not None

    # --- snapshots ----------------------------------------------------------

    def snapshot(self, coverage: Coverage) -> Snapshot:
        """The covered files now (at most ``max_files``)."""
        with self._lock:
            base = self._base_rules(coverage)
            self._collect_events()
            if self._last is not None and not self._changed:
                return self._last
            snapshot, watched_all = self._walk(base)
            self._changed.clear()
            self._last = snapshot if watched_all and self._notifier is not None else None
            return snapshot

    def _walk(self, base: IgnoreStack) -> tuple[Snapshot, bool]:
        """Depth first, each folder's entries in name order (a folder's as ``name/``): the files come
        out in the order of their paths, as a snapshot keeps them.  A watched folder below which
        nothing changed gives its whole subtree's files at once, as the last walk found them.  Also
        says whether every folder walked is watched (then the snapshot stays valid until an event
        comes)."""
        started = time.time_ns()
        self._walks += 1
        touched = _with_ancestors(self._changed)
        paths: list[str] = []
        chunks: list[bytes] = []
        budget = self.max_files * ENTRIES_PER_FILE
        limit = self.max_files
        stack: list[str | tuple[Run, bytes] | _Close] = [""]
        rules_of: dict[str, IgnoreStack] = {"": base}
        truncated = False
        unwatched = 0
        while stack:
            item = stack.pop()
            if isinstance(item, _Close):
                if unwatched == item.unwatched:
                    item.folder.subtree = _subtree(item, paths, chunks, budget)
                continue
            if not isinstance(item, str):
                run, packed = item
                room = limit - len(paths)
                if len(run) >= room:
                    paths.extend(run[:room])
                    chunks.append(packed[: room * RECORD.size])
                    truncated = len(run) > room or any(not isinstance(rest, _Close) for rest in stack)
                    break
                paths.extend(run)
                chunks.append(packed)
                continue
            ignores = rules_of.pop(item)
            cached = self._folders.get(item)
            if item not in touched and cached is not None and (subtree := cached.subtree) is not None and (
                    len(subtree.paths) < limit - len(paths) and subtree.entries <= budget):
                paths.extend(subtree.paths)
                chunks.append(subtree.stats)
                budget -= subtree.entries
                continue
            folder = self._folder(item, ignores, started)
            if folder is None:
                continue
            if item:  # the root's subtree is the whole snapshot, kept as such
                stack.append(_Close(folder, len(paths), len(chunks), budget, unwatched))
            if folder.wd == NO_WATCH or folder.links:
                unwatched += 1
            budget -= folder.entries
            if budget < 0:
                truncated = True
                break
            inner = ignores.inside(item, folder.rules)
            runs = iter(reversed(folder.stats))
            for part in reversed(folder.parts):
                if isinstance(part, str):
                    rules_of[part] = inner
                    stack.append(part)
                else:
                    stack.append((part, next(runs)))
        watched_all = self._notifier is not None and not unwatched and not truncated
        return Snapshot(tuple(paths), b"".join(chunks), truncated), watched_all

    def _base_rules(self, coverage: Coverage) -> IgnoreStack:
        """The root's ``.git/info/exclude`` rules (read again when its size or time changes); other
        globs to cover or changed rules forget every folder (a guard made for each event of a hook
        process brings equal globs, which keep them)."""
        exclude = os.path.join(self.root, EXCLUDE_FILE)
        stat = _stat_pair(exclude)
        if self._coverage is None or coverage.globs != self._coverage.globs or stat != self._exclude_stat:
            self._forget("")
            self._coverage, self._exclude_stat = coverage, stat
            text = _read_small(exclude) if stat is not None else None
            self._exclude_rules = IgnoreStack().inside("", IgnoreFile(text)) if text else IgnoreStack()
        return self._exclude_rules

    # --- watches ------------------------------------------------------------

    def _collect_events(self) -> None:
        """What the watches saw since the last walk; starts watching at the second walk."""
        notifier = self._notifier
        if notifier is not None and notifier.pid != os.getpid():  # a forked copy: its queue is shared
            self._stop_watching(keep_notify=True)
            notifier = None
        if notifier is None:
            if self._notify and self._walks >= 1:
                self._start_watching()
            return
        events = notifier.events()
        if events.overflowed:
            self._stop_watching(keep_notify=True)
            self._start_watching()
            return
        for wd in events.changed:
            folder = self._watched.get(wd)
            if folder is not None:
                self._changed.add(folder)
        for wd in events.gone:
            folder = self._watched.get(wd)
            if folder is not None:
                self._forget(folder)
                self._changed.add(_parent(folder))

    def _start_watching(self) -> None:
        try:
            self._notifier = Notifier()
        except OSError:
            self._notify = False
            return
        self._last = None
        for folder in self._folders.values():
            folder.wd, folder.subtree = NO_WATCH, None  # watched when next walked

    def _stop_watching(self, *, keep_notify: bool) -> None:
        if self._notifier is not None:
            self._notifier.close()
            self._notifier = None
        self._notify = self._notify and keep_notify
        self._watched.clear()
        self._last = None
        for folder in self._folders.values():
            folder.wd, folder.subtree = NO_WATCH, None

    def _watch(self, path: str, relative: str) -> int:
        """Watch a folder before it is listed (a change after that is reported); NO_WATCH when refused."""
        notifier = self._notifier
        if notifier is None:
            return NO_WATCH
        try:
            wd = notifier.watch(path)
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.ENOMEM, errno.EBADF):  # the user's watches ran out
                self._stop_watching(keep_notify=False)
            return NO_WATCH
        if self._watched.setdefault(wd, relative) != relative:
            return NO_WATCH  # the same folder under two paths (a bind mount): its events name one
        return wd

    def _forget(self, relative: str, *, below_only: bool = False) -> None:
        """Forget a folder and everything below it (gone, renamed, or walked by other rules), and
        their watches; ``below_only`` keeps the folder itself."""
        for path in [path for path in self._folders if path.startswith(relative)]:
            if below_only and path == relative:
                continue
            folder = self._folders.pop(path)
            if folder.wd != NO_WATCH and self._watched.get(folder.wd) == path:
                del self._watched[folder.wd]
                if self._notifier is not None:
                    self._notifier.unwatch(folder.wd)
        self._last = None

    # --- folders ------------------------------------------------------------

    def _folder(self, relative: str, ignores: IgnoreStack, started: int) -> _Folder | None:
        """The folder's listing and its runs' current stats."""
        cached = self._folders.get(relative)
        if cached is not None and cached.wd != NO_WATCH and not cached.links and (
                relative not in self._changed):
            return cached  # watched and quiet: nothing in it changed
        if cached is not None:
            cached.subtree = None
        path = f"{self.root}/{relative}" if relative else self.root
        wd = cached.wd if cached is not None and cached.wd != NO_WATCH else self._watch(path, relative)
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            self._forget(relative)
            return None
        folder = cached
        if folder is None or folder.mtime != mtime or (
                folder.rules_stat is not None and _stat_pair(f"{path}/{GITIGNORE}") != folder.rules_stat):
            folder = self._list(path, relative, mtime, ignores, cached)
            if folder is None:
                self._forget(relative)
                return None
        self._folders[relative] = folder
        stats = tuple(self._stat_run(part) for part in folder.parts if not isinstance(part, str))
        if any(packed is None for packed in stats):  # a file went between the listing and its stat
            folder.mtime, folder.wd = RELIST, NO_WATCH
            return _present(folder, self._stat_one)
        folder.stats = tuple(packed for packed in stats if packed is not None)
        folder.wd = wd
        if wd == NO_WATCH and mtime >= started - RACY_NS:
            folder.mtime = RELIST  # its time may not show yet a change made in this clock tick
        return folder

    def _list(self, path: str, relative: str, mtime: int, ignores: IgnoreStack,
              cached: _Folder | None) -> _Folder | None:
        """List the folder again; what changed in it (subfolders gone, new ``.gitignore`` rules) is
        forgotten below it."""
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            return None
        names = {entry.name for entry in entries}
        rules_stat = _stat_pair(f"{path}/{GITIGNORE}") if GITIGNORE in names else None
        if cached is not None and rules_stat == cached.rules_stat:
            rules = cached.rules
        else:
            text = _read_small(f"{path}/{GITIGNORE}") if rules_stat is not None else None
            rules = IgnoreFile(text) if text else None
            if cached is not None:
                self._forget(relative, below_only=True)  # its rules decided what is walked below it
        if VENV_MARKER in names:
            folder = _Folder(mtime, (), 0, None, None, False)
        else:
            inner = ignores.inside(relative, rules)
            folder = self._covered(relative, entries, inner, rules, rules_stat, mtime)
        if cached is not None:
            for gone in cached.subfolders() - folder.subfolders():
                self._forget(gone)
        return folder

    def _covered(self, relative: str, entries: list[os.DirEntry[str]], inner: IgnoreStack,
                 rules: IgnoreFile | None, rules_stat: tuple[int, int] | None, mtime: int) -> _Folder:
        """A folder's covered files and the subfolders to walk, from its entries."""
        coverage = self._coverage
        assert coverage is not None
        covered: list[str] = []
        links = False
        for entry in entries:
            name = entry.name
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file()  # a regular file, or a link to one: no FIFO, device or socket
            except OSError:
                continue
            if is_folder:
                if name not in SKIPPED_FOLDERS and not inner.ignored(relative + name, True):
                    covered.append(f"{relative}{name}/")
            elif (is_file and coverage.covers(name, relative + name)
                  and not inner.ignored(relative + name, False)):
                covered.append(relative + name)
                links = links or entry.is_symlink()
        covered.sort()
        return _Folder(mtime, _parts(covered), len(covered), rules, rules_stat, links)

    def _stat_run(self, run: Run) -> bytes | None:
        """The run's files' packed stats; None when one of them cannot be stat'ed."""
        root = self.root
        try:
            infos = list(map(os.stat, [f"{root}/{path}" for path in run]))
        except OSError:
            return None
        packed = array("q", chain.from_iterable(map(_FIELDS, infos)))
        if sys.byteorder == "big":
            packed.byteswap()
        return packed.tobytes()

    def _stat_one(self, path: str) -> bytes | None:
        return self._stat_run((path,))

    # --- files --------------------------------------------------------------

    def read(self, path: str) -> str | None:
        """The text of ``path`` (relative to the root); None when missing, unreadable or not a regular
        file (a FIFO never blocks it); raises ``TooLarge`` past ``max_bytes``."""
        return read_local_file(os.path.join(self.root, path), self.max_bytes)

    def relative(self, path: str) -> str | None:
        """``path`` as the agent named it (absolute, or relative to the root), relative to the root;
        None when it lies outside."""
        full = os.path.normpath(os.path.join(self.root, path))
        if full != self.root and not full.startswith(self.root.rstrip("/") + "/"):
            return None
        rel = os.path.relpath(full, self.root)
        return None if rel == "." else rel.replace(os.sep, "/")

    def staged(self, paths: list[str]) -> dict[str, str | None]:
        """Each path's text as staged in git (the index), None for a path git does not track;
        empty when the root is not in a git work tree or git cannot run."""
        if not paths:
            return {}
        import subprocess  # only for a workspace that reads git's index

        request = "".join(f":./{path}\n" for path in paths).encode("utf-8", "surrogateescape")
        try:
            done = subprocess.run(["git", "-C", self.root, "cat-file", "--batch"], input=request,
                                  capture_output=True, timeout=GIT_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError):
            return {}
        if done.returncode != 0:
            return {}
        return _batch_texts(paths, done.stdout)


def _parts(covered: list[str]) -> tuple[str | Run, ...]:
    """Sorted covered entries as subfolders and runs of files."""
    parts: list[str | Run] = []
    run: list[str] = []
    for item in covered:
        if item.endswith("/"):
            if run:
                parts.append(tuple(run))
                run = []
            parts.append(item)
        else:
            run.append(item)
    if run:
        parts.append(tuple(run))
    return tuple(parts)


def _present(folder: _Folder, stat_one: Callable[[str], bytes | None]) -> _Folder:
    """The folder with only the files that could be stat'ed, one by one (not kept: it is listed again)."""
    kept: list[str] = []
    stats: list[bytes] = []
    for part in folder.parts:
        if isinstance(part, str):
            kept.append(part)
            continue
        for path in part:
            packed = stat_one(path)
            if packed is not None:
                kept.append(path)
                stats.append(packed)
    parts = _parts(kept)
    runs = tuple(part for part in parts if not isinstance(part, str))
    grouped: list[bytes] = []
    at = 0
    for run in runs:
        grouped.append(b"".join(stats[at : at + len(run)]))
        at += len(run)
    return _Folder(folder.mtime, parts, len(kept), folder.rules, folder.rules_stat, folder.links,
                   NO_WATCH, tuple(grouped))


def _subtree(close: _Close, paths: list[str], chunks: list[bytes], budget: int) -> _Subtree:
    """A folder's subtree at the end of its walk (a folder without subfolders shares its own run)."""
    folder = close.folder
    if len(folder.parts) == 1 and not isinstance(folder.parts[0], str):
        return _Subtree(folder.parts[0], folder.stats[0], close.budget - budget)
    return _Subtree(tuple(paths[close.paths:]), b"".join(chunks[close.chunks:]), close.budget - budget)


def _with_ancestors(folders: set[str]) -> set[str]:
    """The folders and every folder above them (relative, ``name/``; the root is ``""``)."""
    found: set[str] = set()
    for folder in folders:
        while folder not in found:
            found.add(folder)
            if not folder:
                break
            folder = _parent(folder)
    return found


def _parent(relative: str) -> str:
    """The folder holding a folder (relative, ``name/``); the root's is the root."""
    parent = posixpath.dirname(relative.rstrip("/"))
    return f"{parent}/" if parent else ""


def _batch_texts(paths: list[str], output: bytes) -> dict[str, str | None]:
    """Parse ``git cat-file --batch`` output (one header line, then the content, per request)."""
    texts: dict[str, str | None] = {}
    at = 0
    for path in paths:
        end = output.find(b"\n", at)
        if end < 0:
            break
        header = output[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            texts[path] = output[at : at + size].decode("utf-8", "surrogateescape")
            at += size + 1
        else:
            texts[path] = None
    return texts


def _stat_pair(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def _read_small(path: str) -> str | None:
    """An ignore file's text; None when it is missing, not a regular file, or over ``IGNORE_FILE_LIMIT``."""
    try:
        return read_local_file(path, IGNORE_FILE_LIMIT)
    except TooLarge:
        return None
