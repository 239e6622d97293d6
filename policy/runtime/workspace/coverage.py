"""Which files a snapshot covers: those a gate checks, and those the policy tracks."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from fnmatch import translate


class Coverage:
    """File globs (``*.py``, ``src/*.json``) as one test of a file's name and relative path.

    A glob matches a file when it matches its name or its whole path, as a gate's ``files`` do.
    """

    __slots__ = ("_globs", "_names", "_paths")

    def __init__(self, globs: Iterable[str]) -> None:
        self._globs = tuple(dict.fromkeys(globs))
        names = [glob for glob in self._globs if "/" not in glob]
        paths = [glob for glob in self._globs if "/" in glob]
        self._names = _combined(names)
        self._paths = _combined(paths)

    @property
    def globs(self) -> tuple[str, ...]:
        return self._globs

    def covers(self, name: str, path: str) -> bool:
        return bool((self._names is not None and self._names(name))
                    or (self._paths is not None and self._paths(path)))


def _combined(globs: list[str]) -> Callable[[str], re.Match[str] | None] | None:
    if not globs:
        return None
    return re.compile("|".join(f"(?:{translate(glob)})" for glob in globs)).match
