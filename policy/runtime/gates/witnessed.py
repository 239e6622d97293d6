"""Whole-text scans that are skipped on texts where they cannot match.

Python's ``re`` tries a pattern at every byte, and a pattern that starts with a lookaround or
an anchor at every byte with all its machinery: the C preprocessor's passes and the C++
stand-ins cost 3 to 20 ms each on 100 KB whether they find anything or not (2,000 lines of
a long macro name: 130 ms for the 33 scans, as much as tree-sitter's parse of the text).  A
``Witnessed`` pattern carries a *witness*: an RE2 expression that matches somewhere in every
text the pattern matches in (the pattern with its lookarounds consumed or dropped, its
possessive quantifiers made plain, ``\\s`` spelt out).  RE2 reads 100 KB in a fraction of a
millisecond and stops at the first match, so a scan costs that much more where it was
needed anyway and nothing of its own where it was not.  ``tests/test_gate_witnesses.py``
holds every witness to that promise on real code and on generated token soups.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from policy.model.re2_spans import compile_re2_bytes

Replacement = bytes | Callable[[re.Match[bytes]], bytes]


class Witnessed:
    """``pattern``'s whole-text scans (``finditer``, ``sub``), run only on a text that holds
    ``witness`` (RE2 syntax, read byte by byte).  ``pattern`` itself is there for searches
    from a given offset, which the witness does not speed up."""

    __slots__ = ("_compiled", "pattern", "witness")

    def __init__(self, pattern: re.Pattern[bytes], witness: bytes) -> None:
        self.pattern = pattern
        self.witness = witness
        self._compiled: Any = None
        """The witness compiled by RE2, on its first use (a hook that checks no C needs none)."""

    def found_in(self, data: bytes) -> bool:
        """Whether ``data`` holds the witness: False means ``pattern`` matches nowhere in it."""
        if self._compiled is None:
            self._compiled = compile_re2_bytes(self.witness)
        return self._compiled.search(data) is not None

    def finditer(self, data: bytes) -> Iterator[re.Match[bytes]]:
        return self.pattern.finditer(data) if self.found_in(data) else iter(())

    def sub(self, replacement: Replacement, data: bytes) -> bytes:
        return self.pattern.sub(replacement, data) if self.found_in(data) else data

