"""A workspace seen through a harness's own lister and reader (a sandbox not on this disk).

``list_files()`` returns every file under the root as ``(path, size, mtime_ns)`` or
``(path, size, mtime_ns, ctime_ns)``; paths are relative to the root or absolute
under it.  The same folders are skipped as on a local disk, and ``.gitignore``
files found in the listing are read through ``read_file`` and applied.
``find_lister`` builds a lister from a function that runs a shell command in
the sandbox (GNU ``find``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence

from policy.runtime.gates.bounds import TooLarge
from policy.runtime.workspace.coverage import Coverage
from policy.runtime.workspace.ignore import IgnoreFile, IgnoreStack
from policy.runtime.workspace.local import DEFAULT_MAX_FILES, GITIGNORE, SKIPPED_FOLDERS, VENV_MARKER
from policy.runtime.workspace.snapshot import FileStat, Snapshot

Lister = Callable[[], Iterable[Sequence[object]]]
ReadFile = Callable[[str], "str | None"]


class ListedWorkspace:
    """Files under ``root`` as ``list_files`` lists them and ``read_file`` reads them."""

    local_clock = False

    def __init__(self, list_files: Lister, read_file: ReadFile, *, root: str = "/",
                 max_files: int = DEFAULT_MAX_FILES) -> None:
        self.list_files = list_files
        self.read_file = read_file
        self.root = posixpath.normpath(root) if root else "/"
        self.max_files = max_files
        self._rules: dict[str, tuple[tuple[int, int], IgnoreFile]] = {}

    def __repr__(self) -> str:
        return f"ListedWorkspace({self.root!r})"

    def snapshot(self, coverage: Coverage) -> Snapshot:
        entries = [entry for raw in self.list_files() if (entry := self._entry(raw)) is not None]
        skipped = {posixpath.dirname(path) for path, *_ in entries if posixpath.basename(path) == VENV_MARKER}
        rules = self._ignore_files(entries)
        folders: dict[str, tuple[bool, IgnoreStack]] = {"": (False, IgnoreStack().inside("", rules.get("")))}
        found: list[FileStat] = []
        for path, size, mtime, ctime in entries:
            name = posixpath.basename(path)
            if not coverage.covers(name, path):
                continue
            hidden, stack = self._folder(posixpath.dirname(path), folders, rules, skipped)
            if hidden or stack.ignored(path, False):
                continue
            found.append((path, size, mtime, ctime))
        truncated = len(found) > self.max_files
        return Snapshot.of(sorted(found)[: self.max_files], truncated=truncated)

    def _folder(self, folder: str, folders: dict[str, tuple[bool, IgnoreStack]],
                rules: dict[str, IgnoreFile], skipped: set[str]) -> tuple[bool, IgnoreStack]:
        """Whether a folder is skipped or ignored, and the rules inside it (memoised per snapshot)."""
        known = folders.get(folder)
        if known is not None:
            return known
        hidden, stack = self._folder(posixpath.dirname(folder), folders, rules, skipped)
        name = posixpath.basename(folder)
        hidden = hidden or name in SKIPPED_FOLDERS or folder in skipped or stack.ignored(folder, True)
        result = (hidden, stack.inside(folder + "/", rules.get(folder)))
        folders[folder] = result
        return result

    def _ignore_files(self, entries: list[FileStat]) -> dict[str, IgnoreFile]:
        """Folder → its ``.gitignore`` rules, read again only when the file's size or time changes."""
        rules: dict[str, IgnoreFile] = {}
        for path, size, mtime, _ in entries:
            if posixpath.basename(path) != GITIGNORE:
                continue
            folder = posixpath.dirname(path)
            cached = self._rules.get(path)
            if cached is None or cached[0] != (size, mtime):
                try:
                    text = self.read(path)
                except TooLarge:
                    text = None
                cached = ((size, mtime), IgnoreFile(text or ""))
                self._rules[path] = cached
            rules[folder] = cached[1]
        return rules

    def _entry(self, raw: Sequence[object]) -> FileStat | None:
        if len(raw) < 3:
            return None
        path, size, mtime = raw[0], raw[1], raw[2]
        ctime = raw[3] if len(raw) > 3 else 0
        if not isinstance(path, str) or not all(isinstance(v, int) for v in (size, mtime, ctime)):
            return None
        relative = self.relative(path)
        if relative is None:
            return None
        return relative, int(size), int(mtime), int(ctime)  # type: ignore[call-overload]

    def read(self, path: str) -> str | None:
        """The file's text through ``read_file``; None when it cannot be read (``read_file``'s
        ``TooLarge`` passes through)."""
        try:
            return self.read_file(posixpath.join(self.root, path))
        except OSError:
            return None

    def relative(self, path: str) -> str | None:
        full = posixpath.normpath(posixpath.join(self.root, path))
        if full == self.root:
            return None
        prefix = self.root.rstrip("/") + "/"
        return full[len(prefix) :] if full.startswith(prefix) else None

    def staged(self, paths: list[str]) -> dict[str, str | None]:
        return {}


def find_lister(run: Callable[[str], str], root: str) -> Lister:
    """A lister that runs GNU ``find`` through ``run(command) -> output`` (a sandbox's shell)."""
    pruned = " -o ".join(f"-name {name}" for name in sorted(SKIPPED_FOLDERS))
    command = (f"find {_quoted(root)} -type d \\( {pruned} \\) -prune -o -type f "
               "-printf '%P\\t%s\\t%T@\\t%C@\\n'")

    def list_files() -> list[FileStat]:
        return [entry for line in run(command).splitlines() if (entry := parse_find_line(line)) is not None]

    return list_files


def parse_find_line(line: str) -> FileStat | None:
    """One line of ``find -printf '%P\\t%s\\t%T@\\t%C@\\n'``; None when it is not one."""
    parts = line.split("\t")
    if len(parts) != 4 or not parts[0] or not parts[1].isdigit():
        return None
    mtime, ctime = _nanoseconds(parts[2]), _nanoseconds(parts[3])
    if mtime is None or ctime is None:
        return None
    return parts[0], int(parts[1]), mtime, ctime


def _nanoseconds(seconds: str) -> int | None:
    whole, _, fraction = seconds.partition(".")
    if not whole.isdigit() or (fraction and not fraction.isdigit()):
        return None
    return int(whole) * 1_000_000_000 + int((fraction + "000000000")[:9])


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
