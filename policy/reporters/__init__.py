"""Render the diagnostics of a lint run: text for people, JSON, GitHub annotations, SARIF.

Every renderer takes a :class:`LintReport` (the sorted diagnostics and how many
files were checked) and returns the whole output as one string.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from policy.model.diagnostics import Diagnostic, Severity, sort_diagnostics


@dataclass(frozen=True)
class LintReport:
    """The outcome of checking some policy files."""

    diagnostics: tuple[Diagnostic, ...]
    """Sorted by file and position, without duplicates."""
    files: int
    """How many policy sources were checked."""
    texts: Mapping[str, str] = field(default_factory=dict)
    """The policy and template files read, by path: the only files an excerpt may show."""

    @classmethod
    def build(cls, diagnostics: Iterable[Diagnostic], files: int,
              texts: Mapping[str, str] | None = None) -> LintReport:
        """Sort and de-duplicate (a base file extended by two checked files reports once)."""
        unique = list(dict.fromkeys(diagnostics))
        return cls(diagnostics=tuple(sort_diagnostics(unique)), files=files, texts=dict(texts or {}))

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity is Severity.ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity is Severity.WARNING)


def relative_location(file: str, base: Path | None = None) -> str | None:
    """``file`` as a POSIX path relative to ``base`` (default: the working directory).

    None when the file lies outside ``base`` or is not a path on disk
    (``builtin:default``, ``<stdin>``).
    """
    if not os.path.isabs(file) and not os.path.exists(file):
        return None
    root = os.path.abspath(base or Path.cwd())
    absolute = os.path.abspath(file)
    try:
        inside = os.path.commonpath([root, absolute]) == root
    except ValueError:  # another drive (Windows)
        inside = False
    if not inside:
        return None
    return Path(os.path.relpath(absolute, root)).as_posix()
