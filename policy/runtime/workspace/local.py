"""A workspace on the local disk: a fast walk of its covered files, and its files' text.

The walk skips version-control folders, virtual environments (any folder
holding a ``pyvenv.cfg``), ``node_modules``, caches, and what ``.gitignore``
files (and ``.git/info/exclude``) exclude.  It remembers each folder's
covered files and subfolders with the folder's modification time, which
changes whenever an entry is added, removed or renamed in it: an unchanged
folder is not listed again, so a walk costs one ``stat`` per folder and per
covered file.  A folder modified within ``RACY_NS`` of a walk is listed again
next time (its time may not yet show a change made in the same clock tick).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from array import array
from dataclasses import dataclass

from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.ignore import IgnoreFile, IgnoreStack
from policy.runtime.workspace.snapshot import Snapshot

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
READ_LIMIT = 4 << 20
"""Files larger than this are not read (their text is not checked)."""
GIT_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class _Folder:
    """What a walk found in one folder, valid while the folder's mtime stays ``mtime``."""

    mtime: int
    items: tuple[str, ...]
    """Its covered files and the subfolders to walk (``name/``), relative to the root, in path order."""
    rules: IgnoreFile | None
    rules_stat: tuple[int, int] | None


class LocalWorkspace:
    """The files under ``root``.  Thread-safe; one instance may serve many scopes."""

    local_clock = True

    def __init__(self, root: str | os.PathLike[str], *, max_files: int = DEFAULT_MAX_FILES) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.max_files = max_files
        self._lock = threading.Lock()
        self._folders: dict[str, _Folder] = {}
        self._coverage: Coverage | None = None
        self._exclude_stat: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"LocalWorkspace({self.root!r})"

    # --- snapshots ----------------------------------------------------------

    def snapshot(self, coverage: Coverage) -> Snapshot:
        """The covered files now (at most ``max_files``)."""
        with self._lock:
            return self._walk(coverage)

    def _walk(self, coverage: Coverage) -> Snapshot:
        """Depth first, each folder's entries in name order (a folder's as ``name/``): the files come
        out in the order of their paths, as a snapshot keeps them."""
        started = time.time_ns()
        base = self._base_rules(coverage)
        paths: list[str] = []
        stats = array("q")
        budget = self.max_files * ENTRIES_PER_FILE
        stat = os.stat
        root = self.root
        stack: list[tuple[str, IgnoreStack]] = [("", base)]
        truncated = False
        while stack:
            path, ignores = stack.pop()
            if path and path[-1] != "/":
                try:
                    info = stat(f"{root}/{path}")
                except OSError:
                    continue
                paths.append(path)
                stats.extend((info.st_size, info.st_mtime_ns, info.st_ctime_ns))
                if len(paths) >= self.max_files:
                    truncated = bool(stack)
                    break
                continue
            folder = self._folder(path, ignores, started)
            if folder is None:
                continue
            budget -= len(folder.items)
            if budget < 0:
                truncated = True
                break
            inner = ignores.inside(path, folder.rules)
            stack.extend((item, inner) for item in reversed(folder.items))
        if sys.byteorder == "big":
            stats.byteswap()
        return Snapshot(tuple(paths), stats.tobytes(), truncated)

    def _base_rules(self, coverage: Coverage) -> IgnoreStack:
        """The root's ``.git/info/exclude`` rules; a new coverage or a changed file forgets every folder."""
        exclude = os.path.join(self.root, EXCLUDE_FILE)
        stat = _stat_pair(exclude)
        if coverage is not self._coverage or stat != self._exclude_stat:
            self._folders.clear()
            self._coverage, self._exclude_stat = coverage, stat
        text = _read_small(exclude) if stat is not None else None
        return IgnoreStack().inside("", IgnoreFile(text)) if text else IgnoreStack()

    def _folder(self, relative: str, ignores: IgnoreStack, started: int) -> _Folder | None:
        path = f"{self.root}/{relative}" if relative else self.root
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            self._folders.pop(relative, None)
            return None
        cached = self._folders.get(relative)
        if cached is not None and cached.mtime == mtime and (
                cached.rules_stat is None or _stat_pair(f"{path}/{GITIGNORE}") == cached.rules_stat):
            return cached
        if cached is not None and cached.rules_stat is not None:
            self._folders.clear()  # its .gitignore changed: what it decided below it may change
        assert self._coverage is not None
        folder = self._list(path, relative, mtime, ignores, self._coverage)
        if folder is None:
            return None
        if mtime < started - RACY_NS:
            self._folders[relative] = folder
        else:
            self._folders.pop(relative, None)
        return folder

    def _list(self, path: str, relative: str, mtime: int, ignores: IgnoreStack,
              coverage: Coverage) -> _Folder | None:
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            return None
        names = {entry.name for entry in entries}
        if VENV_MARKER in names:
            return _Folder(mtime, (), None, None)
        rules, rules_stat = None, None
        if GITIGNORE in names:
            rules_stat = _stat_pair(f"{path}/{GITIGNORE}")
            text = _read_small(f"{path}/{GITIGNORE}")
            rules = IgnoreFile(text) if text else None
        inner = ignores.inside(relative, rules)
        files: list[str] = []
        folders: list[str] = []
        for entry in entries:
            name = entry.name
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_folder:
                if name not in SKIPPED_FOLDERS and not inner.ignored(relative + name, True):
                    folders.append(f"{relative}{name}/")
            elif coverage.covers(name, relative + name) and not inner.ignored(relative + name, False):
                files.append(relative + name)
        return _Folder(mtime, tuple(sorted(files + folders)), rules, rules_stat)

    # --- files --------------------------------------------------------------

    def read(self, path: str) -> str | None:
        """The text of ``path`` (relative to the root); None when missing, unreadable or too large."""
        full = os.path.join(self.root, path)
        try:
            with open(full, "rb") as handle:
                data = handle.read(READ_LIMIT + 1)
        except OSError:
            return None
        if len(data) > READ_LIMIT:
            return None
        return data.decode("utf-8", "surrogateescape")

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
        request = "".join(f":./{path}\n" for path in paths).encode("utf-8", "surrogateescape")
        try:
            done = subprocess.run(["git", "-C", self.root, "cat-file", "--batch"], input=request,
                                  capture_output=True, timeout=GIT_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError):
            return {}
        if done.returncode != 0:
            return {}
        return _batch_texts(paths, done.stdout)


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
    try:
        with open(path, "rb") as handle:
            return handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
