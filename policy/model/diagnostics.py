"""Located, coded diagnostics: what every stage reports about a policy file."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file.  Lines and columns are 1-based; the end is exclusive.

    A plain frozen dataclass, not a pydantic model: every compiled policy holds spans, and a hook
    process that loads one from the cache should not have to import pydantic for them.
    """

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    start: int = 0
    """Offset of the first character in the source text."""
    end: int = 0
    """Offset one past the last character."""


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Diagnostic:
    """One finding: a stable code, where it is, what is wrong, and how to fix it."""

    code: str
    severity: Severity
    message: str
    span: Span
    help: str | None = None

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.span.file, self.span.line, self.span.column, self.code)


def sort_diagnostics(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Order by file and position, as a reader goes through the file."""
    return sorted(diagnostics, key=lambda d: d.sort_key)


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)


class PolicyError(Exception):
    """A policy could not be loaded; carries every diagnostic found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = sort_diagnostics(diagnostics)
        first = next((d for d in self.diagnostics if d.severity is Severity.ERROR), None)
        summary = (
            f"{first.span.file}:{first.span.line}:{first.span.column}: {first.code}: {first.message}"
            if first
            else "policy has errors"
        )
        extra = len([d for d in self.diagnostics if d.severity is Severity.ERROR]) - 1
        super().__init__(summary + (f" (and {extra} more)" if extra > 0 else ""))
