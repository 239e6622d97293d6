"""The tree-sitter gates on hostile text: the ``partial`` check finishes in time linear in the text.

Each input is 60 KB of what an agent can write in one call: brackets nested
60,000 deep (a closers walk that asked each leaf for its parent took 5 to 27 s
on these), and for HTML a paragraph of 7,000 elements ending in an open
attribute; and code with a block comment opened after each unit, where
tree-sitter's own parse is quadratic.  The bound is generous, so that a
loaded machine cannot fail it: ``PARSES`` parses of the same text by
tree-sitter (timed here, so a slow grammar or machine raises it alike; for
the open comments, of the text with the comment closed, which parses in
linear time) plus ``SECONDS_PER_100_KB`` of the gate's own linear work.  The
figures against one parse are in ``bench/bench_gate_hostile.py``.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterator

import pytest

from policy.model.validators import SYNTAX_TREE_LANGUAGES
from policy.runtime.gates import preprocessor, shortening, syntax_tree
from policy.runtime.gates.grammars import GRAMMARS, parser
from policy.runtime.gates.problems import Verdict
from policy.runtime.gates.syntax_tree import check_syntax_tree, completions

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


def test_a_macro_call_left_open_is_scanned_from_stop_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    # each blanked call's parenthesis scan stopped at every `(` and line break of the lines after it (two
    # Python steps a line of `A_(x`): now only quotes, comments, `)`, `;` and braces stop it
    searches: list[int] = []
    stops = preprocessor._SCAN_STOP

    class Counting:
        def search(self, data: bytes, start: int, end: int) -> re.Match[bytes] | None:
            searches.append(start)
            return stops.search(data, start, end)

    monkeypatch.setattr(preprocessor, "_SCAN_STOP", Counting())
    preprocessor.blank_macro_calls(b"A_(x\n" * 2_000)
    assert 0 < len(searches) <= 20, len(searches)


@pytest.mark.parametrize("language", ["c", "cpp", "css"])
def test_a_text_without_a_quote_is_not_scanned_for_strings(
        language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the scan for strings a line break ends read every comment and string of the text: 8 ms on 100 KB of
    # C++, a fifth of its parse, for a text that holds no string
    scanned: list[bytes] = []
    grammar = GRAMMARS[language]
    strings = grammar.line_strings
    assert strings is not None

    class Counting:
        def finditer(self, data: bytes) -> Iterator[re.Match[bytes]]:
            scanned.append(data)
            return strings.finditer(data)

    monkeypatch.setitem(GRAMMARS, language, dataclasses.replace(grammar, line_strings=Counting()))
    code = "a { b: c; }\n" if language == "css" else "int f(int a) {\n  return a + 1;\n}\n"
    opener = "a { b: f(" if language == "css" else "int x = ("
    check_syntax_tree(language, code * 100 + opener, partial=True)
    assert not scanned
    check_syntax_tree(language, code * 100 + opener.replace("(", "('a\n"), partial=True)
    assert scanned


OPEN_COMMENTS = {
    # language: (text before the code, a unit of valid code, the opener of a block comment, the gate's closer)
    "javascript": ("", "f(a, b);\n", "/*", "*/"),
    "typescript": ("", "let a: number = 1;\n", "/*", "*/"),
    "tsx": ("", "const a = <div>{b}</div>;\n", "/*", "*/"),
    "go": ("package main\n", "var x = 1\n", "/*", "*/"),
    "rust": ("", "fn f() {}\n", "/*", "*/"),
    "java": ("", "class A {}\n", "/*", "*/"),
    "c": ("", "int x;\n", "/*", "*/"),
    "cpp": ("", "int x;\n", "/*", "*/"),
    "ruby": ("", "x = 1\n", "=begin\n", "\n=end\n"),
    "php": ("<?php\n", "$x = 1;\n", "/*", "*/"),
    "css": ("", "a { b: c; }\n", "/*", "*/"),
    "html": ("", "<p>a</p>\n", "<!--", "-->"),
}
JUNK = {"html": "</p>\n"}
"""A line the grammar reads as an error (default ``x = ) (;``)."""
COMMENT_BYTES = 60_000


def open_comments(language: str, junk: str = "", size: int = COMMENT_BYTES) -> str:
    """Code with a block comment opened after each unit and never closed: the first runs to the end, holding
    the others (tree-sitter's lexer reads each of those to the end again: its own parse is quadratic)."""
    start, unit, opener, _ = OPEN_COMMENTS[language]
    return start + junk + (unit + opener) * (size // len(unit + opener))


OPEN_BLOCKS = {
    # blocks opened before the code, which the comment leaves open
    "javascript": "class A {\n  m() {\n", "typescript": "function f() {\n", "tsx": "function F() {\n",
    "go": "func f() {\n", "rust": "fn f() {\n", "java": "class A {\n  void f() {\n", "c": "int f() {\n",
    "cpp": "namespace n {\nint f() {\n", "ruby": "def f\n", "php": "function f() {\n", "css": "@media x {\n",
    "html": "<div>\n",
}


@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("language", OPEN_COMMENTS)
def test_a_comment_left_open_before_more_openers_is_read_in_linear_time(language: str, blocks: bool) -> None:
    # 60 KB took 4 s (HTML) to minutes (C, JavaScript): every parse of the text read each opener to its end
    text = open_comments(language, OPEN_BLOCKS[language] if blocks else "")
    verdict = _check_in_bound(language, text, (text + OPEN_COMMENTS[language][3]).encode())
    assert verdict.status == "incomplete"  # the comment may close: the code before it is a cut-off prefix


@pytest.mark.parametrize("language", OPEN_COMMENTS)
def test_a_text_ending_in_a_comment_is_parsed_with_the_comment_closed(
        language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = open_comments(language, size=2_000)
    closed = (text + OPEN_COMMENTS[language][3]).encode()
    for partial in (True, False):  # one parse, Rust's too: its nesting comments get one closer per opener
        parsed = _counting_parses(language, monkeypatch)
        check_syntax_tree(language, text, partial=partial)
        sizes = list(map(len, parsed))
        assert len(parsed) == 1 and parsed[0].startswith(closed), sizes
    parsed = _counting_parses(language, monkeypatch)  # then with the blocks it leaves open closed
    check_syntax_tree(language, open_comments(language, OPEN_BLOCKS[language], size=2_000), partial=True)
    assert len(parsed) == 2 and parsed[-1].startswith(parsed[-2]), list(map(len, parsed))


@pytest.mark.parametrize("language", OPEN_COMMENTS)
def test_broken_code_before_a_comment_left_open_is_decided_with_the_comment_closed(
        language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the broken line's error stands whatever follows the comment: the text was parsed as it is, each opener
    # read to the end (20 KB: 0.1 to 0.4 s; 60 KB: 1 to 4 s)
    text = open_comments(language, JUNK.get(language, "x = ) (;\n"), size=2_000)
    closed = (text + OPEN_COMMENTS[language][3]).encode()
    for partial in (True, False):
        parsed = _counting_parses(language, monkeypatch)
        verdict = check_syntax_tree(language, text, partial=partial)
        assert verdict.status == "invalid"
        # (C's rule for unknown macros parses the closed text again with a name blanked)
        assert parsed and all(_closed_or_blanked(data, closed) for data in parsed), list(map(len, parsed))
    _check_in_bound(language, open_comments(language, JUNK.get(language, "x = ) (;\n")),
                    (open_comments(language) + OPEN_COMMENTS[language][3]).encode())


def _closed_or_blanked(data: bytes, closed: bytes) -> bool:
    """Whether ``data`` starts with ``closed``, maybe with some of its bytes blanked."""
    return len(data) >= len(closed) and all(
        byte in (expected, 32) for byte, expected in zip(data[: len(closed)], closed, strict=True))


CUT_BEFORE_COMMENTS = {
    # language: (a unit of valid code, a statement cut before its operand); a comment opens after the cut
    "javascript": ("function f(a, b) {\n  return a + b;\n}\n", "x = "),
    "go": ("func f(a int) int {\n\treturn a + 1\n}\n", "var x = "),
    "java": ("class A {\n  int f(int a) {\n    return a + 1;\n  }\n}\n", "class A { int x = "),
    "ruby": ("def f(a)\n  a + 1\nend\n", "x = "),
    "php": ("function f($a) {\n  return $a + 1;\n}\n", "$x = "),
}


@pytest.mark.parametrize("language", CUT_BEFORE_COMMENTS)
def test_code_cut_before_a_comment_left_open_is_completed_after_the_comment_closed(
        language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # `x = /*`, then code with a comment opened after each unit: the closers alone leave the operand missing,
    # and the text was parsed as it is, each opener read to the end (20 KB: 0.7 to 3 s), to try the others
    start, _, opener, closer = OPEN_COMMENTS[language]
    unit, cut = CUT_BEFORE_COMMENTS[language]
    text = start + unit + cut + opener + (unit + opener) * (2_000 // len(unit + opener))
    parsed = _counting_parses(language, monkeypatch)
    assert check_syntax_tree(language, text, partial=True).status == "incomplete"
    assert all(data.startswith((text + closer).encode()) for data in parsed), list(map(len, parsed))


def test_a_valid_text_with_few_openers_after_the_last_closer_is_parsed_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # valid Go as real code has it (the 200 KB bench text of bench_treesitter.py): an opener in a line
    # comment, one more in a string; closing a comment there would be one parse more for nothing
    text = ("package main\n\n/* a */\n" + "var x = 1\n" * 200 + "//go:embed tests/*\n"
            'var glob = "a/*"\n' + "var y = 2\n" * 20)
    parsed = _counting_parses("go", monkeypatch)
    assert check_syntax_tree("go", text, partial=True).status == "valid"
    assert parsed == [text.encode()]


@pytest.mark.parametrize("language", OPEN_COMMENTS)
def test_the_comment_a_whole_text_ends_inside_is_its_error(language: str) -> None:
    text = open_comments(language, size=200)
    assert check_syntax_tree(language, text, partial=True).status == "incomplete"
    _assert_open_comment(language, text, text.index(OPEN_COMMENTS[language][2]))
    broken = open_comments(language, JUNK.get(language, "x = ) (;\n"), size=200)
    line = OPEN_COMMENTS[language][0].count("\n") + 1
    for partial in (True, False):  # a line broken before the comment is blocked
        verdict = check_syntax_tree(language, broken, partial=partial)
        assert verdict.problem is not None and verdict.problem.line == line


STRINGS = {
    # a line whose string holds a comment's opener, after the text before the code
    "javascript": 'x = "/*";\n',
    "go": 'var s = "/*"\n',
    "java": 'class B { String s = "/*"; }\n',
    "c": 'char *s = "/*";\n',
    "php": '$s = "/*";\n',
    "css": 'a { content: "/*"; }\n',
    "html": '<p title="<!--">a</p>\n',
}
READ_AS_COMMENTS = frozenset({"css", "html"})
"""Where tree-sitter reads a comment in such a string once a closer follows (the string is then left open):
the text is parsed as it is, and open comments after the strings are blocked, as they were before."""


@pytest.mark.parametrize("language", STRINGS)
def test_a_comment_opener_in_a_string_opens_no_comment(language: str) -> None:
    start, _, opener, _ = OPEN_COMMENTS[language]
    strings = start + STRINGS[language] * 3
    for partial in (True, False):
        assert check_syntax_tree(language, strings, partial=partial).status == "valid"
    if language not in READ_AS_COMMENTS:  # the comment is the one opened after the strings
        text = strings + open_comments(language, size=200)[len(start) :]
        assert check_syntax_tree(language, text, partial=True).status == "incomplete"
        _assert_open_comment(language, text, text.index(opener, len(strings)))


def _assert_open_comment(language: str, text: str, comment: int) -> None:
    """The whole text's error is the comment opened at ``comment``: its closer is missing."""
    whole = check_syntax_tree(language, text, partial=False)
    assert whole.problem is not None
    line = text.count("\n", 0, comment) + 1
    expected = ("invalid", f"missing `{OPEN_COMMENTS[language][3].strip()}`", line)
    assert (whole.status, whole.problem.message, whole.problem.line) == expected


def _check_in_bound(language: str, text: str, timed: bytes | None = None) -> Verdict:
    """Check ``text`` against the bound, timing the parse of ``timed`` (by default the text)."""
    check_syntax_tree(language, "x = (", partial=True)  # the grammar's queries are built once, not timed
    data = text.encode()
    bound = PARSES * _parse_seconds(language, data if timed is None else timed) \
        + SECONDS_PER_100_KB * len(data) / 100_000
    start = time.perf_counter()
    verdict = check_syntax_tree(language, text, partial=True)
    elapsed = time.perf_counter() - start
    assert verdict.status in ("incomplete", "invalid")  # the text has an error: no valid-path shortcut
    assert elapsed <= bound, f"{language}: {elapsed:.2f} s for {len(data) // 1000} KB (bound {bound:.2f} s)"
    return verdict


OPEN_ENDS = {"go": "var x = (((", "rust": "fn f() { x = (((", "java": "class A { int x = (((",
             "c": "int x = (((", "cpp": "int x = (((", "php": "$x = (((", "css": "a { b: f(f(",
             "shell": "x=$($(", "html": '<p><a b="'}
"""What the code ends in: brackets (HTML: an attribute's value) left open."""


@pytest.mark.parametrize("language", SYNTAX_TREE_LANGUAGES)
def test_a_completion_is_parsed_from_the_tree_of_the_text_it_completes(
        language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # valid code, then open brackets: each completion parsed the whole text again (100 KB: 2 to 4 times the
    # time of one parse in all)
    start, unit, _, _ = OPEN_COMMENTS.get(language, ("", "f() {\n  echo 1\n}\n", "", ""))
    text = start + unit * 200 + OPEN_ENDS.get(language, "x = (((")
    from_trees: list[bool] = []
    parsed = _counting_parses(language, monkeypatch, from_trees)
    check_syntax_tree(language, text, partial=True)
    completions = [index for index, data in enumerate(parsed) if data.startswith(parsed[0]) and index]
    assert completions and all(from_trees[index] for index in completions), list(zip(map(len, parsed),
                                                                                   from_trees, strict=True))


def test_a_quote_appended_after_an_error_is_read_from_that_error_on() -> None:
    # parsed from the tree edited at the end only, the string the quote closes was read on as code after it
    # (the `if` a modifier, `end` closing `unless`): the quote's ending was lost
    text = "def f=(b)\n  unless b\n    raise 'a b if x == :pp\n  end\n  super\nend\n"
    assert "'\nend\nend" in completions("ruby", text)


def test_html_elements_closed_by_their_own_end_tags_are_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    # every tag of 100 KB of valid HTML was walked for what is still open (HTML's valid elements may leave
    # a `<p>` open): 3.6 to 8.9 times one parse in all, for 100 open `<div>` at the end
    tracked: list[str] = []
    track = syntax_tree._track
    monkeypatch.setattr(syntax_tree, "_track", lambda opened, node, *rest: (tracked.append(node.type),
                                                                            track(opened, node, *rest)))
    text = '<div class="a"><p>text</p><ul><li>a<li>b</ul></div>\n' * 300 + "<div>" * 3 + '<a b="'
    assert check_syntax_tree("html", text, partial=True).status == "incomplete"
    assert len(tracked) < 100, len(tracked)


PLAIN_TOKENS = {
    # valid code whose every tracked token's action depends on its type alone, then open brackets
    "ruby": "def f(a)\n  [a, {b: (a + 1)}]\nend\n" * 200 + "x = (((",
    "shell": 'f() {\n  echo "$(g "$1")"\n}\n' * 200 + "x=$($(",
}


@pytest.mark.parametrize("language", PLAIN_TOKENS)
def test_the_closers_walk_acts_on_plain_tokens_itself(language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ruby's and shell's valid nodes are walked (a keyword may leave a block open): each of their brackets,
    # keywords and quotes went through ``_track``'s tests of what is open, 3 to 4 times the walk's own cost
    tracked: list[str] = []
    track = syntax_tree._track
    monkeypatch.setattr(syntax_tree, "_track", lambda opened, node, *rest: (tracked.append(node.type),
                                                                            track(opened, node, *rest)))
    assert check_syntax_tree(language, PLAIN_TOKENS[language], partial=True).status == "incomplete"
    assert not tracked, tracked[:10]


def test_html_tags_cost_the_text_angle_stand_in_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # the stand-in for a `>` in text matched every tag, and its callback gave each tag back (12,000 calls on
    # 100 KB of tags): now only a lone angle and the end are matches
    filled: list[bytes] = []
    fill = syntax_tree._filled
    monkeypatch.setattr(syntax_tree, "_filled", lambda *args: filled.append(args[-1].group()) or fill(*args))
    text = '<div class="a"><p>text</p></div>\n' * 300 + "<p>a > b" + "<div>" * 3
    assert check_syntax_tree("html", text, partial=True).status == "incomplete"
    assert len(filled) <= 4, len(filled)


REPEATED = {
    "brackets": lambda language: hostile(language) if language != "html" else "<p>" + "<div>" * 12_000,
    "a long line of arguments": lambda language: '<p><a b="1" ' + 'c="1" ' * 10_000 if language == "html"
    else _HEADS.get(language, "x = ") + "f(" + "1, " * 20_000,
}


@pytest.mark.parametrize("shape", REPEATED)
@pytest.mark.parametrize("language", SYNTAX_TREE_LANGUAGES)
def test_a_text_ending_in_one_unit_repeated_is_completed_with_fewer_repeats(
        language: str, shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 20,000 `(`: the completion closing them all was a parse of twice the text, read by tree-sitter in more
    # than linear time (7 to 34 times one parse of the text in all)
    text = REPEATED[shape](language)
    parsed = _counting_parses(language, monkeypatch)
    assert check_syntax_tree(language, text, partial=True).status == "incomplete"
    sizes = list(map(len, parsed))
    assert parsed[0] == text.encode() and sum(sizes[1:]) <= len(parsed[0]) // 4, sizes


SHORTENED = {
    # texts whose run of repeats the gate shortens, and what each is (the same as read whole)
    "shell quotes, an odd count": ("shell", "x=" + '"' * 5_001, "incomplete"),
    "shell quotes, an even count": ("shell", "x=" + '"' * 5_000, "valid"),
    "ruby quotes, an even count": ("ruby", 'x = "' + '"' * 5_002, "incomplete"),
    "a broken line, then brackets": ("c", "int x = ) (;\n" + "int y = " + "(" * 6_000, "invalid"),
    "lines of open strings": ("java", 'x = "a\n' * 2_000, "invalid"),
    "lines of calls": ("ruby", "f(x\n" * 2_000, "incomplete"),
}


@pytest.mark.parametrize("case", SHORTENED)
def test_a_shortened_run_of_repeats_is_read_as_the_whole(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    language, text, status = SHORTENED[case]
    shortened = check_syntax_tree(language, text, partial=True)
    monkeypatch.setattr(shortening, "REPEATS_CUT", 10 ** 9)  # nothing is shortened
    whole = check_syntax_tree(language, text, partial=True)
    assert shortened.status == whole.status == status
    if whole.problem is not None:
        assert shortened.problem is not None and shortened.problem.line == whole.problem.line


COMMENT_LINES = {
    "block comments": lambda count: "".join(f"\n/* comment {n} */" for n in range(count)),
    "line comments": lambda count: "".join(f"\n  // note {n}" for n in range(count)),
}


@pytest.mark.parametrize("language", ["c", "cpp"])
@pytest.mark.parametrize("lines", COMMENT_LINES)
def test_different_comment_lines_at_the_end_are_read_fewer(
        language: str, lines: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # a list cut after its `,`, then 20,000 comment lines, each different (so no run of one unit): each ending
    # tried parsed them all again (they move into the list it closes), and the preprocessor's passes read
    # them all, a Python call per comment in two of them: 8 to 25 times one parse (now: the shorter text's
    # parses, and those of the whole's start, read alone first: a 32nd of the text and a 32nd of that)
    text = "int f(\n  a," + COMMENT_LINES[lines](20_000)
    parsed = _counting_parses(language, monkeypatch)
    preprocessed: list[int] = []
    blank = syntax_tree.blank_macro_calls

    def counted(data: bytes) -> bytes:
        preprocessed.append(len(data))
        return blank(data)

    monkeypatch.setattr(syntax_tree, "blank_macro_calls", counted)
    cut = check_syntax_tree(language, text, partial=True)
    sizes = list(map(len, parsed))
    assert parsed[0] == text.encode() and sum(sizes[1:]) <= len(parsed[0]) // 3, sizes
    assert sum(preprocessed) <= len(parsed[0]) // 4, preprocessed
    monkeypatch.setattr(shortening, "REPEATS_CUT", 10 ** 9)  # nothing is shortened
    assert check_syntax_tree(language, text, partial=True) == cut


@pytest.mark.parametrize("text", [
    "#define F(a) \\" + COMMENT_LINES["line comments"](1_000),  # the directive's line goes on in the first
    "int f(\n  a," + COMMENT_LINES["block comments"](1_000) + "\n/* \"a\" */",  # a quote ends the run
    "int f(\n  a,\n/* one\n  two */" + "\n".join(["", "/* x */", "// y"] * 10),  # short after a long comment
])
def test_comment_lines_after_a_backslash_or_before_a_quote_are_not_cut(text: str) -> None:
    assert shortening.shortened(text.encode(), comment_lines=True) is None


def test_a_comment_line_holding_a_semicolon_or_parenthesis_is_not_cut() -> None:
    # the last `;` or brace before a macro call left open decides whether the preprocessor blanks the call,
    # even inside a comment: such a line ends the run cut (it once changed a verdict)
    text = "FOO_BAR(x,\nint z;" + COMMENT_LINES["line comments"](600) + "\n// f(a);" \
        + COMMENT_LINES["block comments"](1_000)
    cut = shortening.shortened(text.encode(), comment_lines=True)
    assert cut is not None and b"// f(a);" in cut.text and b"// note 599" in cut.text


def test_the_comment_lines_cut_keep_what_the_preprocessors_scans_read() -> None:
    # the member-group scan from `FOO_BAR(` reads 4 KB and rewrites the call when the text ends within them: a
    # cut that kept less after the code made this broken text a cut-off prefix
    forms = ["/* {} **/", "  ", "// {} a/b", "/* {} */"]
    lines = (forms[n % 4].format(n * 7919 % 1000) for n in range(1_100))
    text = "FOO_BAR(x,\n/* 1 **/\nint z2;\n" + "\n".join(lines)
    assert shortening.shortened(text.encode(), comment_lines=True) is not None
    assert check_syntax_tree("c", text, partial=True).status == "invalid"


@pytest.mark.parametrize("language", ["c", "cpp"])
def test_a_c_text_that_completes_as_written_is_not_preprocessed(
        language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # a 100 KB string line of export macros: the preprocessor's scans took 40 to 90 times the text's parse
    text = PREPROCESSOR_SHAPES["export macros on one line"]
    parsed = _counting_parses(language, monkeypatch)
    assert check_syntax_tree(language, text, partial=True).status == "incomplete"
    # the text, then it with its ending (in C, read from the declaration holding the error on)
    assert len(parsed) == 2 and (parsed[0] + b" _)").endswith(parsed[1]), list(map(len, parsed))


@pytest.mark.parametrize("language", ["c", "cpp"])
def test_a_header_cut_after_a_comment_completes_as_written(language: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # a header cut after a `#define` that ends in a comment: its `*/` was taken for an operator, the one
    # ending tried as written was a filler that fails, and the whole went through the preprocessor (elf.h: 17
    # times the parse)
    text = "#ifndef A_H\n#define A_H\n" + "#define A 1\t/* the first */\n" * 2_000
    preprocessed: list[int] = []
    blank = syntax_tree.blank_macro_calls
    monkeypatch.setattr(syntax_tree, "blank_macro_calls", lambda data: preprocessed.append(1) or blank(data))
    assert check_syntax_tree(language, text, partial=True).status == "incomplete"
    assert not preprocessed


@pytest.mark.parametrize("comment", ["/* {} */", "// {}"])
def test_the_comments_after_a_c_lists_comma_are_read_back_in_linear_time(comment: str) -> None:
    # each comment cut off took a copy of the text before it: quadratic in their number
    data = ("int f(\n  a," + "".join("\n" + comment.format(i) for i in range(200_000))).encode()
    start = time.perf_counter()
    end = syntax_tree._code_end(data)
    elapsed = time.perf_counter() - start
    assert data[:end] == b"int f(\n  a,"
    # 0.25 s per 100 KB, no parse to measure against: the walk back takes 0.1 s for these 2 MB, the copies
    # took 15 to 19 s
    assert elapsed <= 0.25 * len(data) / 100_000, f"{elapsed:.2f} s for {len(data) // 1000} KB"


BROKEN_EARLY = {
    # a text that is one error from its first lines on: its start alone decides (``_broken_start``; an error
    # that ends in the start, ``_start_read_alone``)
    "rust": 'x = "a\n' * 2_000,
    "css": "a { b: 'c\n" * 2_000,
    "html": "<p class='a\n" * 2_000,
    "java": 'x = "a\n' * 2_000,
    # under 8 KB: decided by the first completion's MISSING ``;`` between valid neighbours
    "java, 7 KB": 'x = "a\n' * 1_000,
    # a line broken among names, then 100 KB: each name blanked as an unknown macro's once cost a check of the
    # whole (C: 15 times its parse)
    "c, a line broken among names": "void g(void) {\n  h(a1 a2 a3 a4 a5 a6 a7 a8 a9 +);\n}\n"
                                    + "int f(int a) {\n  return a + 1;\n}\n" * 3_000,
    "cpp, a line broken among names": "void g(void) {\n  h(a1 a2 a3 a4 a5 a6 a7 a8 a9 +);\n}\n"
                                      + "int f(int a) {\n  return a + 1;\n}\n" * 3_000,
    # a broken line, then code ending in a run of comment openers: closing them parsed the whole several times
    "rust, then open comments": "x = ) (;\n" + "fn f(a: i32) -> i32 {\n    a + 1\n}\n/*" * 600,
}


@pytest.mark.parametrize("case", BROKEN_EARLY)
def test_a_text_broken_early_is_decided_in_few_parses(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    language = case.split(",")[0]
    text = BROKEN_EARLY[case]
    parsed = _counting_parses(language, monkeypatch)
    assert check_syntax_tree(language, text, partial=True).status == "invalid"
    sizes = list(map(len, parsed))
    assert sum(sizes) <= 2 * len(text.encode()), f"{len(parsed)} parses of {sizes}"


JSDOC_CUT = "/**\n * Calls it:\n *\n * function g(cb) {\n *   cb('a');\n * }\n"
"""The start of a doc comment holding code, as a write cut inside it ends."""


@pytest.mark.parametrize(("language", "unit"), [
    ("typescript", "export function f(a: number): number {\n  return a + 1;\n}\n"),
    ("javascript", "function f(a, b) {\n  return a + b;\n}\n"),
    ("java", "class A {\n  int f(int a) {\n    return a + 1;\n  }\n}\n"),
    ("c", "int f(int a) {\n  return a + 1;\n}\n"),
])
def test_a_text_cut_inside_one_block_comment_is_read_with_it_closed(language: str, unit: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # tree-sitter reads the comment's content as code, one error from its opener on, which each tail tried
    # (`*/`, quotes) read again: 16 parses of the whole for a TypeScript file cut inside its JSDoc (27 times
    # the parse on rxjs's code); now the text as written, then with the comment closed
    text = unit * (100_000 // len(unit)) + JSDOC_CUT
    parsed = _counting_parses(language, monkeypatch)
    assert check_syntax_tree(language, text, partial=True).status == "incomplete"
    assert sum(map(len, parsed)) <= 2.1 * len(text), list(map(len, parsed))


DECLARED_TWO_WAYS = "GMOCK_DEFINE_DEFAULT_ACTION_FOR_RETURN_TYPE_(bool, false);\n" * 2_000
"""118 KB of lines tree-sitter-c reads two ways (a function's declaration or a macro's call), so that it
reuses no node of their tree."""


@pytest.mark.parametrize(("end", "status", "wholes"), [
    ("int x = (", "incomplete", 1),  # decided as written: the one ending was a second parse of the whole
    ("int g(void) {\n  return f(1,", "incomplete", 1),
    # broken: the preprocessed text's parse, and two names tried blanked as unknown macros' (a check of the
    # whole each); its endings, and theirs, were 8 parses of the whole more
    ("int g(void) {\n  x = ) (;\n  y = (", "invalid", 4),
])
def test_a_c_texts_endings_read_it_from_the_node_holding_its_first_error(
        end: str, status: str, wholes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # the lines before the top-level node holding the first error are whole, and no ending changes them
    parsed = _counting_parses("c", monkeypatch)
    assert check_syntax_tree("c", DECLARED_TWO_WAYS + end, partial=True).status == status
    assert len([data for data in parsed if len(data) > len(end) + 100]) == wholes, list(map(len, parsed))


SCRIPT = 'f() {\n  echo "$1"\n}\n' * 5_000
"""100 KB of shell functions: a complete start."""


@pytest.mark.parametrize(("tail", "status", "line"), [
    ("x=$(" * 100, "incomplete", None),  # cut off: each `$(` still open
    ("echo )\n" + "x=$(" * 100, "invalid", 15_001),  # a stray `)`, then cut off
])
def test_a_long_scripts_rest_after_a_complete_start_is_read_alone(tail: str, status: str, line: int | None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # tree-sitter-bash reads these whole as one ERROR from the first byte, so no ending reused a subtree: each
    # was a parse of the whole (the bench's `x=$$(`, ten endings: 9 to 10 times the parse); now the start is
    # parsed once more, from the tree, and the rest alone
    text = SCRIPT + tail
    assert parser("shell").parse(text.encode()).root_node.is_error
    from_trees: list[bool] = []
    parsed = _counting_parses("shell", monkeypatch, from_trees)
    verdict = check_syntax_tree("shell", text, partial=True)
    assert (verdict.status, verdict.problem and verdict.problem.line) == (status, line)
    whole = [from_tree for data, from_tree in zip(parsed, from_trees, strict=True)
             if len(data) > len(tail) + 8192]
    assert whole == [False, True], list(zip(map(len, parsed), from_trees, strict=True))
    assert check_syntax_tree("shell", tail, partial=True).status == status  # as the rest written alone


@pytest.mark.parametrize("head", ["cat <<EOF\n", 'x="\n', "echo '\n", "x=$(\n"])
def test_a_long_scripts_rest_is_not_read_alone_after_an_open_start(head: str) -> None:
    # a heredoc, string or substitution open in the start: the `)` is inside it or closes it, and the text
    # is a cut-off prefix (as `bash -n` says)
    assert check_syntax_tree("shell", head + SCRIPT + "echo )\n" + "x=$(" * 100, partial=True).status \
        == "incomplete"


def _counting_parses(language: str, monkeypatch: pytest.MonkeyPatch,
                     from_trees: list[bool] | None = None) -> list[bytes]:
    """The texts the gate's parser for ``language`` parses from now on, in order, each from where it is read
    (tree-sitter's included ranges), and in ``from_trees`` whether each was parsed from an edited tree."""
    real = parser(language)
    parsed: list[bytes] = []

    class Counting:
        language = real.language

        @property
        def included_ranges(self) -> object:
            return real.included_ranges

        @included_ranges.setter
        def included_ranges(self, ranges: object) -> None:
            real.included_ranges = ranges

        def parse(self, data: bytes, old_tree: object = None) -> object:
            parsed.append(data[real.included_ranges[0].start_byte :])
            if from_trees is not None:
                from_trees.append(old_tree is not None)
            return real.parse(data) if old_tree is None else real.parse(data, old_tree)

    monkeypatch.setattr(syntax_tree, "parser", lambda name: Counting())
    return parsed
