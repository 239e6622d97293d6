"""RE2 patterns compiled with policyctl's options, and match spans straight from
google-re2's compiled matcher.

For bytes, ``re2.compile(...).search`` wraps each match in a generator and a
match object, which costs as much as the match itself, and ``finditer`` about
1 µs more per match.  ``spans_finder`` asks the wrapper's compiled ``RE2``
object directly and ``iter_spans`` steps through the matches by the wrapper's
own rule; where the wrapper's internals are not there, both fall back to its
public API, which gives the same spans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache, partial
from typing import Any

MAX_MEMORY = 8 << 20
"""RE2's memory budget per pattern, in bytes."""

Spans = list[tuple[int, int]]
"""The whole match, then each group; ``NO_SPAN`` for a group that did not take part."""
FindSpans = Callable[[bytes, int], "Spans | None"]
NO_SPAN = (-1, -1)


def compile_re2(expression: str) -> Any:
    """``expression`` (flags included: ``(?m)…``) compiled by RE2 with policyctl's options;
    raises ``re2.error``.  google-re2 is imported here, by the first pattern compiled."""
    import re2

    return re2.compile(expression, _options(False))


def compile_re2_bytes(expression: bytes) -> Any:
    """``expression`` compiled by RE2 with policyctl's options, to be asked only whether it
    matches in bytes: read as ``re`` reads bytes (Latin-1, each byte one character: no UTF-8
    decoding that a stray byte could fail), without capture groups."""
    import re2

    return re2.compile(expression, _options(True))


@cache
def _options(over_bytes: bool) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_MEMORY
    if over_bytes:
        options.encoding = re2.Options.Encoding.LATIN1
        options.never_capture = True
    return options


def spans_finder(regex: Any) -> FindSpans:
    """``find(data, pos)``: the spans of ``regex``'s first match in ``data`` (bytes, not
    str) at or after byte ``pos`` (patterns like ``^`` and ``\\b`` still see the bytes
    before it); None when nothing matches."""
    import re2  # already imported: ``regex`` is compiled

    # google-re2's compiled matcher, asked directly: 49-53% less time per failed result
    # (bench/bench_shortcuts.py)
    match = getattr(getattr(regex, "_regexp", None), "Match", None)
    unanchored = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if match is None or unanchored is None:
        return partial(_public_spans, regex)

    def find(data: bytes, pos: int) -> Spans | None:
        size = len(data)
        spans: Spans = match(unanchored, data, min(max(pos, 0), size), size)  # clamped, as ``search`` does
        return None if spans[0] == NO_SPAN else spans

    return find


def iter_spans(find: FindSpans, data: bytes) -> Iterator[Spans]:
    """Every match's spans, in order; after an empty match the search goes on one byte
    further (as ``finditer`` does)."""
    pos, end = 0, len(data)
    while (spans := find(data, pos)) is not None:
        yield spans
        stop = spans[0][1]
        if pos == end:
            return
        pos = pos + 1 if stop == pos else stop


def group_text(data: bytes, span: tuple[int, int]) -> bytes | None:
    """The text of a group, None when it did not take part."""
    return None if span == NO_SPAN else data[span[0] : span[1]]


def _public_spans(regex: Any, data: bytes, pos: int) -> Spans | None:
    found = regex.search(data, pos)
    return None if found is None else [found.span(group) for group in range(regex.groups + 1)]
