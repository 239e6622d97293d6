"""``.gitignore`` rules: which paths of a workspace git would not track.

A ``.gitignore`` holds one pattern a line (git's wildmatch: ``*``, ``?``,
``[…]``, ``**``; a leading ``/`` or an inner ``/`` anchors it to the file's
folder; a trailing ``/`` matches folders only; ``!`` re-includes; the last
matching line decides).  Deeper files override shallower ones.  One file's
rules are compiled into one regular expression per kind of path (files,
folders), so a path costs one match per ``.gitignore`` that applies to it.
The agent can write a ``.gitignore``, so the expressions are RE2's: matching
is linear in the path whatever the patterns (``*a*a*a…b`` cannot backtrack),
and a file whose rules RE2 will not compile within its memory budget
applies none.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("policy.guard")


@dataclass(frozen=True, slots=True)
class _Rule:
    """One ``.gitignore`` line, as a regex over relative paths."""

    regex: str
    negated: bool
    folders_only: bool


class IgnoreFile:
    """The rules of one ``.gitignore`` (or ``.git/info/exclude``), for paths relative to its folder."""

    __slots__ = ("_files", "_folders", "_negated_files", "_negated_folders", "empty")

    def __init__(self, text: str) -> None:
        rules = [rule for line in text.splitlines() if (rule := _rule(line)) is not None]
        rules.reverse()  # the last matching line decides: it becomes the first alternative
        self.empty = not rules
        self._files, self._negated_files = _combined([r for r in rules if not r.folders_only])
        self._folders, self._negated_folders = _combined(rules)

    def decides(self, relative: str, is_folder: bool) -> bool | None:
        """True: ignored; False: re-included by a ``!`` line; None: no line matches."""
        regex, negated = (self._folders, self._negated_folders) if is_folder else (
            self._files, self._negated_files)
        if regex is None:
            return None
        found = regex.fullmatch(relative)
        if found is None:
            return None
        return found.lastindex not in negated


class IgnoreStack:
    """The ``.gitignore`` files that apply inside one folder: the folder's own, then its parents'."""

    __slots__ = ("_levels",)

    def __init__(self, levels: Sequence[tuple[str, IgnoreFile]] = ()) -> None:
        self._levels = tuple(levels)
        """(folder prefix relative to the root, ending in ``/`` or empty; its rules), deepest first."""

    def inside(self, folder: str, rules: IgnoreFile | None) -> IgnoreStack:
        """The stack for a subfolder (``folder`` relative to the root, ending in ``/``)."""
        if rules is None or rules.empty:
            return self
        return IgnoreStack(((folder, rules), *self._levels))

    def ignored(self, path: str, is_folder: bool) -> bool:
        """Is ``path`` (relative to the root) ignored by the deepest file that has a say?"""
        for prefix, rules in self._levels:
            verdict = rules.decides(path[len(prefix):], is_folder)
            if verdict is not None:
                return verdict
        return False


def _combined(rules: list[_Rule]) -> tuple[Any, frozenset[int]]:
    """One alternation of the rules, each in its own group (in order), and the groups that negate;
    no expression when there are no rules, or RE2 cannot compile them."""
    if not rules:
        return None, frozenset()
    import re2  # by the first ignore file that has rules (a hook's event may walk no folder)

    try:
        regex = re2.compile("(?s)" + "|".join(f"({rule.regex})" for rule in rules))
    except re2.error as err:
        log.warning("a .gitignore's %d rules are not applied: %s", len(rules), err)
        return None, frozenset()
    return regex, frozenset(index for index, rule in enumerate(rules, start=1) if rule.negated)


def _rule(line: str) -> _Rule | None:
    """One ``.gitignore`` line as a rule; None for blank lines and comments."""
    if line.endswith("\r"):
        line = line[:-1]
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "  # an escaped trailing space stays
    line = stripped
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith(("\\!", "\\#")):
        line = line[1:]
    folders_only = line.endswith("/") and not line.endswith("\\/")
    if folders_only:
        line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = translate(line)
    regex = body if anchored else f"(?:.*/)?{body}"
    return _Rule(regex, negated, folders_only)


def translate(pattern: str) -> str:
    """A wildmatch pattern as a regular expression (RE2's syntax, also Python's) matching whole
    ``/``-separated paths."""
    out: list[str] = []
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        if char == "*":
            stars = i
            while i < size and pattern[i] == "*":
                i += 1
            segment_start = stars == 0 or pattern[stars - 1] == "/"
            if i - stars >= 2 and segment_start and (i == size or pattern[i] == "/"):
                if i == size:
                    out.append(".*")
                else:
                    out.append("(?:.*/)?")
                    i += 1
            else:
                out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(char))
            else:
                out.append(_char_class(pattern[i + 1 : end]))
                i = end
        elif char == "\\" and i + 1 < size:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``; -1 when it is never closed."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i
        i += 1
    return -1


def _char_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = body.replace("[", "\\[")
    if escaped.startswith("]"):
        escaped = "\\" + escaped
    return f"[^/{escaped}]" if negate else f"[{escaped}]"
