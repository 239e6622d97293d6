"""Spans from google-re2's compiled matcher are the spans its public API gives."""

from __future__ import annotations

from functools import partial

import pytest
import re2

from policy.model.re2_spans import _public_spans, group_text, iter_spans, spans_finder

PATTERNS = [
    r"No module named '?(?P<module>[\w.]+)'?",
    r"(?m)^(?:(?P<program>[\w.-]+): )?(?P<problem>unrecognized arguments?: [^\n]+)",
    r"\b\d+(\.\d+)?m?s\b",
    r"x*",
    r"(a)|(b)",
    r"$",
    r"é+",
]
TEXTS = [
    b"",
    b"Traceback\nModuleNotFoundError: No module named 'yaml'\n",
    b"prog: unrecognized arguments: --fast\nprog: unrecognized argument: -x",
    b"took 12ms, then 3.5s, then 7 s; 10ms",
    b"axxbxa",
    "caf\u00e9\u00e9 cr\u00e8me \u00e9".encode(),
]


def test_the_compiled_matcher_is_used() -> None:
    assert not isinstance(spans_finder(re2.compile("a")), partial)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_first_spans_from_every_position_are_the_public_apis(pattern: str) -> None:
    regex = re2.compile(pattern)
    find = spans_finder(regex)
    for text in TEXTS:
        for pos in range(-1, len(text) + 2):
            assert find(text, pos) == _public_spans(regex, text, pos), (text, pos)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_match_is_found_as_finditer_finds_it(pattern: str) -> None:
    regex = re2.compile(pattern)
    for text in TEXTS:
        groups = range(regex.groups + 1)
        expected = [[match.span(group) for group in groups] for match in regex.finditer(text)]
        assert list(iter_spans(spans_finder(regex), text)) == expected, text
        assert list(iter_spans(partial(_public_spans, regex), text)) == expected, text


def test_a_group_that_did_not_take_part_has_no_text() -> None:
    spans = spans_finder(re2.compile(r"(a)|(b)"))(b"xb", 0)
    assert spans is not None
    assert [group_text(b"xb", span) for span in spans] == [b"b", None, b"b"]
