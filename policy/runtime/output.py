"""Reading a tool output once: its tail, which patterns match it, and its fingerprint.

Only the tail of an output is read (its last ``policy.scan_limit`` bytes, cut
at a line start) and only with RE2, so a 10 MB output costs what its tail
costs.  One RE2 set holds every signature pattern and every ``normalize``
pattern: a single pass over the tail tells which of each match.  Signatures
(``policy.runtime.signatures``) and result comparison (``policy.runtime.loops``) both work
from that one reading.

Results are compared by a fingerprint of their normalised tail, plus, for an
output longer than the tail, its normalised first ``HEAD_CHARS`` characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from policy.model.compiled import CompiledPolicy, Pattern
from policy.model.fingerprint import digest
from policy.model.per_policy import per_policy

HEAD_CHARS = 2048
"""Characters of an output's start that also count when its tail is not all of it."""
SET_MAX_MEMORY = 64 << 20
"""Memory budget of a policy's RE2 set (its DFA grows lazily up to this)."""

_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
"""UTF-8 bytes that cannot start a character."""
_GAP = "\n…\n".encode()


@dataclass(slots=True)
class Output:
    """One tool output as the guard reads it."""

    text: str
    """The whole output."""
    tail: bytes
    """Its last ``scan_limit`` bytes as UTF-8, CRLF read as LF (see ``scanned_tail``)."""
    truncated: bool
    """The tail is not the whole output."""
    signatures: frozenset[int]
    """Indexes in ``policy.runtime.signatures`` of the signatures whose pattern matches the tail."""
    normalize_from: int
    """Index of the first ``normalize`` rule that matches the tail (their count when none does)."""
    normalized_tail: bytes | None = field(default=None, repr=False, compare=False)
    """The tail after the ``normalize`` rules, once ``OutputReader.normalized`` worked it out."""


class OutputReader:
    """A policy's patterns prepared for reading outputs: one RE2 set over all of them."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self._limit = max(policy.scan_limit, 1)
        self._signatures = len(policy.signatures)
        self._normalizers = policy.normalizers
        signatures = [rule.pattern for rule in policy.signatures]
        self._patterns = signatures + [rule.pattern for rule in policy.normalizers]

    @cached_property
    def pattern_set(self) -> Any:
        """One RE2 set of the signature patterns, then the normalize ones (None when there are
        none, or RE2 could not build it); built by the first output read."""
        return _pattern_set(self._patterns)

    def read(self, content: Any) -> Output:
        """Read an output (a string, or whatever a harness put there)."""
        text = as_text(content)
        tail, truncated = scanned_tail(text, self._limit)
        hits = self._matching(tail)
        count = self._signatures
        return Output(
            text=text,
            tail=tail,
            truncated=truncated,
            signatures=frozenset(hit for hit in hits if hit < count),
            normalize_from=min((hit - count for hit in hits if hit >= count), default=len(self._normalizers)),
        )

    def normalized(self, output: Output) -> bytes:
        """The tail after the ``normalize`` rules (worked out once per output)."""
        if output.normalized_tail is None:
            output.normalized_tail = self._normalized(output.tail, output.normalize_from)
        return output.normalized_tail

    def fingerprint(self, output: Output) -> bytes:
        """An 8-byte fingerprint of the output after the ``normalize`` rules (never all zero bytes)."""
        data = self.normalized(output)
        if output.truncated:
            head = self._normalized(output.text[:HEAD_CHARS].encode("utf-8", "surrogatepass"), 0)
            data = head + _GAP + data
        return digest(data)

    def _normalized(self, data: bytes, first: int) -> bytes:
        """``data`` after the rules from ``first`` on.  Starting at the first rule that
        matches gives exactly ``CompiledPolicy.normalize``'s text: most outputs match no
        rule and skip them all."""
        for rule in self._normalizers[first:]:
            data = rule.apply(data)
        return data

    def _matching(self, tail: bytes) -> Sequence[int]:
        """Indexes of the patterns (signatures, then normalize rules) that match the tail."""
        if self.pattern_set is not None:
            return self.pattern_set.Match(tail) or ()
        # No set (no patterns, or RE2 could not build one): one search per pattern.
        return [i for i, pattern in enumerate(self._patterns) if pattern.spans(tail) is not None]


@per_policy
def output_reader(policy: CompiledPolicy) -> OutputReader:
    """The policy's ``OutputReader``."""
    return OutputReader(policy)


def scanned_tail(text: str, limit: int) -> tuple[bytes, bool]:
    """The last ``limit`` (at least 1) bytes of ``text`` as UTF-8 (CRLF read as LF), cut as
    ``last_bytes`` cuts, and whether that is less than the whole text.  Costs O(limit)
    whatever the length of ``text``."""
    encoded = text[-(limit + 1) :].encode("utf-8", "replace")
    return _crlf_as_lf(last_bytes(encoded, limit)), len(encoded) > limit


def last_bytes(data: bytes, limit: int) -> bytes:
    """The last ``limit`` bytes of UTF-8 ``data``; when that cuts into a line, from the
    next line start, or, inside one huge line, from the next whole character."""
    if len(data) <= limit:
        return data
    tail = data[-limit:]
    if data[-limit - 1 : -limit] == b"\n":
        return tail
    newline = tail.find(b"\n")
    return tail[newline + 1 :] if 0 <= newline < len(tail) - 1 else tail.lstrip(_CONTINUATION_BYTES)


def _crlf_as_lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n") if b"\r" in data else data  # a 1-byte test is a memchr


def as_text(content: Any) -> str:
    """Tool output as text, whatever a harness put there."""
    if isinstance(content, str):
        return content
    if isinstance(content, bytes | bytearray):
        return bytes(content).decode("utf-8", "replace")
    return "" if content is None else str(content)


def decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _pattern_set(patterns: Sequence[Pattern]) -> Any:
    """An RE2 set of the patterns, or None when there are none or RE2 cannot build one."""
    if not patterns:
        return None
    import re2  # imported with the first pattern set: an event that reads no output needs none

    options = re2.Options()
    options.max_mem = SET_MAX_MEMORY
    pattern_set = re2.Set.SearchSet(options)
    try:
        for pattern in patterns:
            pattern_set.Add(pattern.expression)
        pattern_set.Compile()
    except re2.error:
        return None
    return pattern_set
