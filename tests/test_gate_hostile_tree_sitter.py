"""The tree-sitter gates on hostile text: the ``partial`` check finishes in time linear in the text.

Each input is 60 KB of what an agent can write in one call: brackets nested
60,000 deep (a closers walk that asked each leaf for its parent took 5 to 27 s
on these), and for HTML a paragraph of 7,000 elements ending in an open
attribute.  The bound is generous, so that a loaded machine cannot fail it:
``PARSES`` parses of the same text by tree-sitter (timed here, so a slow
grammar or machine raises it alike) plus ``SECONDS_PER_100_KB`` of the
gate's own linear work.  The figures against one parse are in
``bench/bench_gate_hostile.py``.
"""

from __future__ import annotations

import time

import pytest

from policy.model.validators import SYNTAX_TREE_LANGUAGES
from policy.runtime.gates import syntax_tree
from policy.runtime.gates.grammars import parser
from policy.runtime.gates.syntax_tree import check_syntax_tree

PARSES = 10
SECONDS_PER_100_KB = 3.0
DEPTH = 60_000
_HEADS = {"go": "package main\nvar x = ", "rust": "fn f() { x = ", "java": "class A { int x = ",
          "c": "int x = ", "cpp": "int x = ", "php": "<?php\n$x = ", "css": "a { b: "}
_OPENERS = {"shell": "$(", "css": "f("}


def hostile(language: str) -> str:
    """Brackets nested deep after a statement's head (HTML: many elements, then an open attribute)."""
    if language == "html":
        return "<p>" + "<i>a</i>" * 7_000 + '<a b="'
    opener = _OPENERS.get(language, "(")
    return _HEADS.get(language, "x = ") + opener * (DEPTH // len(opener))


def _parse_seconds(language: str, data: bytes) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        parser(language).parse(data)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("language", SYNTAX_TREE_LANGUAGES)
def test_the_partial_check_of_hostile_text_is_linear(language: str) -> None:
    _check_in_bound(language, hostile(language))


PREPROCESSOR_SHAPES = {
    # each took 3 to 36 s before the preprocessor's scans were made linear; each ends in an open bracket
    "macro names split many ways": ("GMOCK_" * 5 + "(bool, false);\n") * 10 + "int x = (",  # a regex's 2^n
    "a macro's name, then blanks": "A_" + " " * 20_000 + "(",  # two runs of blanks side by side: n^2
    "export macros on one line": 'const char *s = "' + "A_ b( " * 16_000 + '";\nint x = (',  # each looked
    # back to the line's start
    "macro calls blanked one after another": "int\n" + "AB(x)\n" * 10_000,  # each walked back over all
}


@pytest.mark.parametrize("language", ["c", "cpp"])
@pytest.mark.parametrize("shape", PREPROCESSOR_SHAPES)
def test_the_preprocessor_reads_hostile_text_in_linear_time(language: str, shape: str) -> None:
    _check_in_bound(language, PREPROCESSOR_SHAPES[shape])


def _check_in_bound(language: str, text: str) -> None:
    check_syntax_tree(language, "x = (", partial=True)  # the grammar's queries are built once, not timed
    data = text.encode()
    bound = PARSES * _parse_seconds(language, data) + SECONDS_PER_100_KB * len(data) / 100_000
    start = time.perf_counter()
    verdict = check_syntax_tree(language, text, partial=True)
    elapsed = time.perf_counter() - start
    assert verdict.status in ("incomplete", "invalid")  # the text has an error: no valid-path shortcut
    assert elapsed <= bound, f"{language}: {elapsed:.2f} s for {len(data) // 1000} KB (bound {bound:.2f} s)"


BROKEN_EARLY = {
    # a text that is one error from its first lines on: its start alone decides (``_broken_start``)
    "rust": 'x = "a\n' * 2_000,
    "css": "a { b: 'c\n" * 2_000,
    "html": "<p class='a\n" * 2_000,
    "java": 'x = "a\n' * 2_000,
    # under 8 KB: decided by the first completion's MISSING ``;`` between valid neighbours
    "java, 7 KB": 'x = "a\n' * 1_000,
}


@pytest.mark.parametrize("case", BROKEN_EARLY)
def test_a_text_broken_early_is_decided_in_few_parses(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    language = case.split(",")[0]
    real = parser(language)
    parsed: list[int] = []

    class Counting:
        language = real.language

        def parse(self, data: bytes) -> object:
            parsed.append(len(data))
            return real.parse(data)

    monkeypatch.setattr(syntax_tree, "parser", lambda name: Counting())
    text = BROKEN_EARLY[case]
    assert check_syntax_tree(language, text, partial=True).status == "invalid"
    assert sum(parsed) <= 2 * len(text.encode()), f"{len(parsed)} parses of {parsed}"
