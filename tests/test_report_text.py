"""The text renderer: header, excerpt with a caret under the span, help, summary."""

from __future__ import annotations

import textwrap

import click

from policy.language.parser import parse
from policy.model.diagnostics import Diagnostic, Severity, Span
from policy.reporters import LintReport
from policy.reporters.text import MAX_EXCERPT, MAX_MESSAGE, render_diagnostic, render_text, summary_line


def diag(line: int, column: int, end_line: int, end_column: int, *, code: str = "E102",
         severity: Severity = Severity.ERROR, message: str = "unknown setting `wran`",
         help: str | None = None, file: str = "a.policy") -> Diagnostic:
    span = Span(file=file, line=line, column=column, end_line=end_line, end_column=end_column)
    return Diagnostic(code=code, severity=severity, message=message, span=span, help=help)


def caret_under(rendered: str) -> str:
    """The source text the caret line points at (excerpt and caret are lines 2 and 3)."""
    lines = rendered.splitlines()
    excerpt, marker = lines[1], lines[2]
    start = marker.index("^")
    return excerpt[start:start + len(marker) - start]


SOURCE = "loop repeat {\n  wran 3\n  stop 5\n}\n"


def test_header_excerpt_caret_and_help() -> None:
    rendered = render_diagnostic(diag(2, 3, 2, 7, help="did you mean `warn`?"), SOURCE)
    assert rendered == textwrap.dedent("""\
        a.policy:2:3: error[E102]: unknown setting `wran`
          2 |   wran 3
            |   ^~~~
        help: did you mean `warn`?""")


def test_gutter_widens_with_the_line_number() -> None:
    text = "\n" * 1233 + "  wran 3\n"
    rendered = render_diagnostic(diag(1234, 3, 1234, 7), text)
    assert rendered.splitlines()[1:] == ["  1234 |   wran 3", "       |   ^~~~"]


def test_multi_line_span_is_marked_to_the_end_of_its_first_line() -> None:
    rendered = render_diagnostic(diag(1, 6, 4, 2, code="E104", message="loop `repeat` needs `warn`"), SOURCE)
    assert caret_under(rendered) == "repeat {"


def test_empty_span_and_end_of_file_get_one_caret() -> None:
    rendered = render_diagnostic(diag(5, 1, 5, 1, code="E002", message="unexpected end of file"), SOURCE)
    assert rendered.splitlines()[1:] == ["  5 |", "    | ^"]


def test_tabs_are_expanded_and_the_caret_follows() -> None:
    text = "loop repeat {\n\t\twran\t3\n}\n"
    rendered = render_diagnostic(diag(2, 3, 2, 7), text)
    assert "\t" not in rendered
    assert caret_under(rendered) == "wran"


def test_wide_characters_keep_the_caret_aligned() -> None:
    text = 'description "日本語" wran\n'
    rendered = render_diagnostic(diag(1, 19, 1, 23), text)
    excerpt, marker = rendered.splitlines()[1:3]
    # each of the three wide characters takes two columns on a terminal
    assert marker.index("^") == excerpt.index("wran") + 3


def test_control_characters_are_shown_not_sent() -> None:
    text = "gate \x1b[31mred\x07 {}\n"
    rendered = render_diagnostic(diag(1, 6, 1, 7, code="E003", message="unexpected character `\x1b`"), text)
    assert "\x1b" not in rendered and "\x07" not in rendered
    assert "\u241b[31mred\u2407" in rendered
    assert caret_under(rendered) == "\u241b"


def test_crlf_line_endings_are_not_shown() -> None:
    rendered = render_diagnostic(diag(2, 3, 2, 7), SOURCE.replace("\n", "\r\n"))
    assert rendered.splitlines()[1] == "  2 |   wran 3"


def test_a_very_long_line_is_windowed_around_the_span() -> None:
    line = "x" * 50_000 + " wran " + "y" * 50_000
    rendered = render_diagnostic(diag(1, 50_002, 1, 50_006), line + "\n")
    excerpt = rendered.splitlines()[1]
    assert len(excerpt) < MAX_EXCERPT + 20
    assert excerpt.startswith("  1 | …x") and excerpt.endswith("y…")
    assert caret_under(rendered) == "wran"


def test_a_span_running_past_the_window_is_cut_at_its_edge() -> None:
    line = "z" * 200_000
    rendered = render_diagnostic(diag(1, 1, 1, 200_001), line)
    excerpt, marker = rendered.splitlines()[1:3]
    assert len(marker) == len(excerpt) - 1  # up to the closing ellipsis
    assert marker.endswith("~")


def test_a_huge_message_is_shortened() -> None:
    rendered = render_diagnostic(diag(1, 1, 1, 2, message="unknown declaration `" + "a" * 10**6 + "`"), None)
    assert len(rendered) == len("a.policy:1:1: error[E102]: ") + MAX_MESSAGE + 1


def test_without_source_text_only_header_and_help() -> None:
    rendered = render_diagnostic(diag(2, 3, 2, 7, help="did you mean `warn`?"), None)
    assert rendered == "a.policy:2:3: error[E102]: unknown setting `wran`\nhelp: did you mean `warn`?"


def test_a_line_beyond_the_file_gets_no_excerpt() -> None:
    rendered = render_diagnostic(diag(99, 1, 99, 2), SOURCE)
    assert rendered == "a.policy:99:1: error[E102]: unknown setting `wran`"


def test_multi_line_help_is_indented() -> None:
    rendered = render_diagnostic(diag(2, 3, 2, 7, help="first\nsecond"), None)
    assert rendered.endswith("help: first\n      second")


def test_report_sorted_by_location_with_blank_lines_and_summary() -> None:
    sources = {"b.policy": SOURCE, "a.policy": SOURCE}
    report = LintReport.build([
        diag(3, 3, 3, 7, file="b.policy", message="second file"),
        diag(3, 3, 3, 7, severity=Severity.WARNING, code="W103", message="third line"),
        diag(2, 3, 2, 7, message="second line"),
        diag(2, 3, 2, 7, message="second line"),  # reported twice (a base of two files): shown once
    ], files=2)
    rendered = render_text(report, sources.get)
    blocks = rendered.split("\n\n")
    assert [b.splitlines()[0] for b in blocks[:-1]] == [
        "a.policy:2:3: error[E102]: second line",
        "a.policy:3:3: warning[W103]: third line",
        "b.policy:3:3: error[E102]: second file",
    ]
    assert blocks[-1] == "2 errors, 1 warning in 2 files\n"


def test_summary_wording() -> None:
    assert summary_line(LintReport.build([], 3)) == "3 files checked, no problems"
    assert summary_line(LintReport.build([], 1)) == "1 file checked, no problems"
    assert summary_line(LintReport.build([diag(1, 1, 1, 2)], 1)) == "1 error in 1 file"
    warning = diag(1, 1, 1, 2, severity=Severity.WARNING, code="W101")
    assert summary_line(LintReport.build([warning], 2)) == "1 warning in 2 files"


def test_colour_only_when_asked() -> None:
    report = LintReport.build([diag(2, 3, 2, 7, help="h")], 1)
    plain = render_text(report, {"a.policy": SOURCE}.get)
    coloured = render_text(report, {"a.policy": SOURCE}.get, color=True)
    assert "\x1b[" not in plain
    assert "\x1b[31m" in coloured  # errors in red
    assert click.unstyle(coloured) == plain


def test_real_syntax_error_points_at_the_token() -> None:
    text = "loop repeat {\n  warn = 3\n}\n"
    _, diagnostics = parse(text, "a.policy")
    rendered = render_diagnostic(diagnostics[0], text)
    assert rendered.startswith("a.policy:2:8: error[E002]: unexpected `=`")
    assert caret_under(rendered) == "="
