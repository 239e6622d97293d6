"""Collecting diagnostics while reading, composing and compiling a policy."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from policy.language.codes import severity_of
from policy.model.diagnostics import Diagnostic, Span


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """``did you mean `x`?`` for the closest candidate, or None when nothing is close.

    Words far longer than any candidate cannot be close (and would make difflib quadratic).
    """
    names = sorted(set(candidates))
    if not names or len(word) > 2 * max(len(n) for n in names):
        return None
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else None


def join_help(*parts: str | None) -> str | None:
    """Several help sentences as one line; None when there are none."""
    text = "; ".join(p for p in parts if p)
    return text or None


def quoted_list(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


class DiagnosticCollector:
    """An append-only list of diagnostics; the severity comes from the code."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def add(self, code: str, message: str, span: Span, help: str | None = None) -> None:
        self.diagnostics.append(
            Diagnostic(code=code, severity=severity_of(code), message=message, span=span, help=help)
        )

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics.extend(diagnostics)

    def unknown(self, code: str, what: str, word: str, span: Span, candidates: Iterable[str]) -> None:
        """``unknown WHAT `word``` with a did-you-mean and the valid choices."""
        choices = sorted(set(candidates))
        listing = f"{what}s: {quoted_list(choices)}" if choices else None
        self.add(code, f"unknown {what} `{word}`", span, join_help(did_you_mean(word, choices), listing))
