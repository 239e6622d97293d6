"""``policyctl fmt`` and policy.formatter: canonical layout, comments kept, meaning kept."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import policyctl
from policy.language.formatter import FormatError, find_comments, format_text, structure
from policy.language.parser import parse
from policy.resources import data_dir

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted(data_dir("policies").glob("*.policy")) + sorted((REPO / "examples").rglob("*.policy"))


def fmt(text: str) -> str:
    return format_text(textwrap.dedent(text).lstrip("\n"), "t.policy")


def same_meaning(a: str, b: str) -> bool:
    tree_a, _ = parse(a, "a")
    tree_b, _ = parse(b, "b")
    assert tree_a is not None and tree_b is not None
    return structure(tree_a) == structure(tree_b)


def comment_texts(text: str) -> list[str]:
    tree, _ = parse(text, "t")
    assert tree is not None
    return [c.text for c in find_comments(tree)]


# --- the layout rules ------------------------------------------------------------


def test_one_statement_per_line_two_space_indent() -> None:
    assert fmt("""
        gate python {files "*.py"; check python
               partial   allow }
    """) == textwrap.dedent("""\
        gate python {
          files "*.py"
          check python
          partial allow
        }
    """)


def test_one_short_statement_block_written_on_one_line_stays_on_one_line() -> None:
    source = 'policy "p" {\n  scope   {  max_scopes 1000 }\n}\n'
    assert fmt(source) == 'policy "p" {\n  scope { max_scopes 1000 }\n}\n'


def test_block_written_over_several_lines_stays_expanded() -> None:
    assert fmt("scope {\n max_scopes 1000\n}\n") == "scope {\n  max_scopes 1000\n}\n"


def test_one_line_block_of_two_statements_is_expanded() -> None:
    assert fmt("loop x { tool bash { warn 150; stop 300 } }\n") == textwrap.dedent("""\
        loop x {
          tool bash {
            warn 150
            stop 300
          }
        }
    """)


def test_one_line_block_too_long_is_expanded() -> None:
    long_value = '"' + "x" * 95 + '"'
    assert fmt(f"gate g {{ files {long_value} }}\n") == f"gate g {{\n  files {long_value}\n}}\n"


def test_empty_block() -> None:
    assert fmt("test t {\n  call ls {   }\n}\n") == "test t {\n  call ls {}\n}\n"


def test_blank_line_between_top_level_declarations() -> None:
    assert fmt("""
        gate a {
          check json
        }
        gate b { check json }
        normalize /x/ "y"
    """) == textwrap.dedent("""\
        gate a {
          check json
        }

        gate b { check json }

        normalize /x/ "y"
    """)


def test_one_line_declarations_of_a_kind_stay_grouped_as_written() -> None:
    source = 'normalize /a/ "1"\nnormalize /b/ "2"\n\n\n\nnormalize /c/ "3"\nhint h "x"\n'
    assert fmt(source) == 'normalize /a/ "1"\nnormalize /b/ "2"\n\nnormalize /c/ "3"\n\nhint h "x"\n'


def test_blank_lines_inside_blocks_kept_once_never_at_the_edges() -> None:
    source = "loop repeat {\n\n  warn 3\n\n\n  stop 5\n\n}\n"
    assert fmt(source) == "loop repeat {\n  warn 3\n\n  stop 5\n}\n"


def test_values_kept_as_written_pairs_without_spaces() -> None:
    source = 'tool t { edits path = p old=o }\nx 12 64KB 2..4 -1.5e3 /a\\/b/i "\\u00e9\\n"\n'
    assert fmt(source) == 'tool t { edits path=p old=o }\n\nx 12 64KB 2..4 -1.5e3 /a\\/b/i "\\u00e9\\n"\n'


def test_triple_quoted_string_kept_byte_for_byte() -> None:
    source = 'hint h """\n    line one\n  line # two\n  """\n'
    assert fmt(source) == source


def test_json_inline_and_multiline() -> None:
    assert fmt("""
        test t {
          call w {"path":"a.py" , "n": [1, 2.50,{"k":null}], "e": {}, "t": true}
          call w {
            "path": "a.py",
               "content": "x",
          }
        }
    """) == textwrap.dedent("""\
        test t {
          call w { "path": "a.py", "n": [1, 2.5, { "k": null }], "e": {}, "t": true }
          call w {
            "path": "a.py",
            "content": "x"
          }
        }
    """)


def test_json_nested_value_too_long_for_a_line_is_expanded() -> None:
    source = (
        'test t {\n  call m { "path": "app.py", "edits": [\n'
        '    {"old_string": "x = 1", "new_string": "x = 10"},'
        ' {"old_string": "y = 2", "new_string": "y = 20"}\n'
        '  ] }\n}\n'
    )
    assert format_text(source, "t") == textwrap.dedent("""\
        test t {
          call m {
            "path": "app.py",
            "edits": [
              { "old_string": "x = 1", "new_string": "x = 10" },
              { "old_string": "y = 2", "new_string": "y = 20" }
            ]
          }
        }
    """)


def test_json_bare_name_kept_for_the_checker_to_report() -> None:
    assert fmt('test t {\n  call w { "path": oops }\n}\n') == 'test t {\n  call w { "path": oops }\n}\n'


def test_crlf_file_stays_crlf() -> None:
    source = "gate g {\r\n  check json\r\n}\r\nhint h \"\"\"\r\nx\r\n\"\"\"\r\n"
    expected = "gate g {\r\n  check json\r\n}\r\n\r\nhint h \"\"\"\r\nx\r\n\"\"\"\r\n"
    assert format_text(source, "t") == expected


def test_empty_and_comment_only_files() -> None:
    assert format_text("", "t") == ""
    assert format_text("\n\n  \n", "t") == ""
    assert format_text("  # only a comment   \n\n", "t") == "# only a comment\n"


# --- comments ------------------------------------------------------------------------


def test_comments_stay_where_they_were() -> None:
    source = """
        # file header

        # about the policy
        policy "x" {   # after the brace
          description "a # inside a string is not a comment"
          # own line in a block
          scan_limit 64KB   ;  on_internal_error allow # after the second statement
          # at the end of the block
        }  # after the closing brace
        normalize /a#b/ "x"  # after a pattern holding #
        # at the end of the file
    """
    assert fmt(source) == textwrap.dedent("""\
        # file header

        # about the policy
        policy "x" {  # after the brace
          description "a # inside a string is not a comment"
          # own line in a block
          scan_limit 64KB
          on_internal_error allow  # after the second statement
          # at the end of the block
        }  # after the closing brace

        normalize /a#b/ "x"  # after a pattern holding #
        # at the end of the file
    """)


def test_comment_above_a_declaration_moves_with_its_blank_line() -> None:
    source = "gate a {\n  check json\n}\n# about b\ngate b {\n  check json\n}\n"
    assert fmt(source) == "gate a {\n  check json\n}\n\n# about b\ngate b {\n  check json\n}\n"


def test_comment_after_semicolon_follows_the_statement_before_it() -> None:
    formatted = fmt("loop r {\n  warn 3;  # why three\n  stop 5\n}\n")
    assert formatted == "loop r {\n  warn 3  # why three\n  stop 5\n}\n"


def test_comment_in_empty_block() -> None:
    assert fmt("gate g {\n  # todo\n}\n") == "gate g {\n  # todo\n}\n"
    assert fmt("gate g {  # todo\n}\n") == "gate g {}  # todo\n"


def test_comment_inside_json_literal_is_refused_not_lost() -> None:
    source = 'test t {\n  call w {\n    "path": "a.py",  # the file\n    "content": "# no"\n  }\n}\n'
    with pytest.raises(FormatError, match=r"t\.policy:3:22: .*comment inside a JSON literal"):
        format_text(source, "t.policy")


def test_syntax_errors_are_reported_not_formatted() -> None:
    with pytest.raises(FormatError) as caught:
        format_text("gate g {\n  check json\n", "t.policy")
    assert [d.code for d in caught.value.diagnostics] == ["E002"]


# --- shipped and generated policies ------------------------------------------------


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_policies_format_idempotently_keeping_meaning_and_comments(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    formatted = format_text(source, str(path))
    assert same_meaning(source, formatted)
    assert comment_texts(formatted) == comment_texts(source)
    assert format_text(formatted, str(path)) == formatted


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_policies_are_in_canonical_layout(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert format_text(source, str(path)) == source, f"run: policyctl fmt {path}"


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,5}", fullmatch=True)
_TEXT = st.text(st.sampled_from("ab #/\"'\\\t{}é"), max_size=8)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(_TEXT, children, min_size=1, max_size=3),
    max_leaves=6,
)
_COMMENT = st.text(st.sampled_from("ab #{}\";/\t"), max_size=10).map(lambda t: "#" + t.rstrip())


@st.composite
def _value(draw: st.DrawFn) -> str:
    kinds = ["name", "string", "long", "regex", "number", "size", "range", "pair", "json"]
    kind = draw(st.sampled_from(kinds))
    if kind == "name":
        return draw(_NAME)
    if kind == "string":
        return json.dumps(draw(_TEXT), ensure_ascii=draw(st.booleans()))
    if kind == "long":
        body = draw(st.text(st.sampled_from("ab #\n  {}'"), max_size=20))
        return '"""' + body + '"""'
    if kind == "regex":
        return "/" + draw(st.text(st.sampled_from("ab#.*() "), min_size=1, max_size=6)) + "/" + draw(
            st.sampled_from(["", "i", "ms"]))
    if kind == "number":
        return draw(st.sampled_from(["0", "7", "-3", "2.5", "1e3"]))
    if kind == "size":
        return draw(st.sampled_from(["64KB", "1MiB", "10B"]))
    if kind == "range":
        return draw(st.sampled_from(["2..4", "1..10"]))
    if kind == "pair":
        return draw(_NAME) + draw(st.sampled_from(["=", " = "])) + draw(st.sampled_from(["x", '"#s"', "3"]))
    value = draw(_JSON.filter(lambda v: isinstance(v, list) or (isinstance(v, dict) and v)))
    return json.dumps(value, indent=draw(st.sampled_from([None, 2])))


@st.composite
def _block(draw: st.DrawFn, depth: int, comments: list[str]) -> str:
    """Statements with random separators, indentation, blank lines and comments (recorded in order)."""
    pad = " " * draw(st.integers(0, 3))
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            comment = draw(_COMMENT)
            comments.append(comment)
            parts.append(f"{pad}{comment}\n")
        statement = pad + draw(_NAME) + "".join(" " + draw(_value()) for _ in range(draw(st.integers(0, 3))))
        parts.append(statement)
        if depth < 3 and draw(st.integers(0, 3)) == 0:
            parts.append(" {")
            if draw(st.booleans()):
                comment = draw(_COMMENT)
                comments.append(comment)
                parts.append(" " + comment)
            parts.append("\n" + draw(_block(depth + 1, comments)) + pad + "}")
        if draw(st.booleans()):
            comment = draw(_COMMENT)
            comments.append(comment)
            parts.append("  " + comment + "\n")
        else:
            parts.append(draw(st.sampled_from(["\n", "\n\n", "\n\n\n", ";\n", "\n ;\n"])))
    if draw(st.booleans()):
        comment = draw(_COMMENT)
        comments.append(comment)
        parts.append(f"{pad}{comment}\n")
    return "".join(parts)


@st.composite
def _policy(draw: st.DrawFn) -> tuple[str, list[str]]:
    comments: list[str] = []
    return draw(_block(0, comments)), comments


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_policy())
def test_generated_policies_format_idempotently_keeping_meaning_and_comments(
    generated: tuple[str, list[str]],
) -> None:
    source, comments = generated
    tree, diagnostics = parse(source, "g")
    assert tree is not None, (source, diagnostics)
    formatted = format_text(source, "g")
    assert same_meaning(source, formatted)
    assert comment_texts(formatted) == comments
    assert format_text(formatted, "g") == formatted


# --- the command -----------------------------------------------------------------------


UGLY = "gate g {files \"*.json\"; check json}\n"
PRETTY = 'gate g {\n  files "*.json"\n  check json\n}\n'


def test_fmt_rewrites_files_in_folders(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    ugly, pretty = tmp_path / "sub" / "a.policy", tmp_path / "b.policy"
    ugly.write_text(UGLY)
    pretty.write_text(PRETTY)
    result = CliRunner().invoke(policyctl, ["fmt", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert ugly.read_text() == PRETTY
    assert pretty.read_text() == PRETTY
    assert f"reformatted {ugly}" in result.output
    assert "1 file reformatted, 1 file left unchanged" in result.output


def test_fmt_check_lists_files_that_would_change_and_changes_nothing(tmp_path: Path) -> None:
    ugly, pretty = tmp_path / "a.policy", tmp_path / "b.policy"
    ugly.write_text(UGLY)
    pretty.write_text(PRETTY)
    result = CliRunner().invoke(policyctl, ["fmt", "--check", str(ugly), str(pretty)])
    assert result.exit_code == 1
    assert f"would reformat {ugly}" in result.output
    assert str(pretty) not in result.output.replace("would reformat", "")
    assert ugly.read_text() == UGLY
    clean = CliRunner().invoke(policyctl, ["fmt", "--check", str(pretty)])
    assert clean.exit_code == 0, clean.output


def test_fmt_diff_prints_a_unified_diff(tmp_path: Path) -> None:
    ugly = tmp_path / "a.policy"
    ugly.write_text(UGLY)
    result = CliRunner().invoke(policyctl, ["fmt", "--diff", str(ugly)])
    assert result.exit_code == 0
    assert f"--- {ugly}\n+++ {ugly}\n" in result.stdout
    assert '-gate g {files "*.json"; check json}\n' in result.stdout
    assert "+  check json\n" in result.stdout
    assert ugly.read_text() == UGLY
    checked = CliRunner().invoke(policyctl, ["fmt", "--diff", "--check", str(ugly)])
    assert checked.exit_code == 1


def test_fmt_leaves_a_file_with_syntax_errors_alone(tmp_path: Path) -> None:
    broken, ugly = tmp_path / "a.policy", tmp_path / "b.policy"
    broken.write_text("gate g {\n  check json\n")
    ugly.write_text(UGLY)
    result = CliRunner().invoke(policyctl, ["fmt", str(broken), str(ugly)])
    assert result.exit_code == 1
    assert f"{broken}:3:1: error[E002]: unexpected end of file" in result.output
    assert broken.read_text() == "gate g {\n  check json\n"
    assert ugly.read_text() == PRETTY
    assert "1 file could not be formatted" in result.output


def test_fmt_refuses_a_comment_it_cannot_place(tmp_path: Path) -> None:
    path = tmp_path / "a.policy"
    source = 'test t {\n  call w {\n    "path": "a.py"  # here\n  }\n}\n'
    path.write_text(source)
    result = CliRunner().invoke(policyctl, ["fmt", str(path)])
    assert result.exit_code == 1
    assert "comment inside a JSON literal" in result.output
    assert path.read_text() == source


def test_fmt_keeps_a_byte_order_mark_and_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "a.policy"
    path.write_bytes(b"\xef\xbb\xbf" + UGLY.encode())
    path.chmod(0o640)
    assert CliRunner().invoke(policyctl, ["fmt", str(path)]).exit_code == 0
    assert path.read_bytes() == b"\xef\xbb\xbf" + PRETTY.encode()
    assert path.stat().st_mode & 0o777 == 0o640


def test_fmt_reads_standard_input() -> None:
    result = CliRunner().invoke(policyctl, ["fmt", "-"], input=UGLY)
    assert result.exit_code == 0
    assert result.stdout == PRETTY


def test_fmt_usage_errors(tmp_path: Path) -> None:
    assert CliRunner().invoke(policyctl, ["fmt"]).exit_code == 2
    missing = CliRunner().invoke(policyctl, ["fmt", str(tmp_path / "nope.policy")])
    assert missing.exit_code == 2
    assert "no such file or folder" in missing.output
    builtin = CliRunner().invoke(policyctl, ["fmt", "builtin:default"])
    assert builtin.exit_code == 2


def test_fmt_as_a_process_on_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "a.policy"
    path.write_bytes(b"gate \xff {}\n")
    run = subprocess.run([sys.executable, "-m", "cli", "fmt", str(path)], capture_output=True, text=True,
                         cwd=REPO, check=False)
    assert run.returncode == 1
    assert "error[E001]: invalid UTF-8 byte 0xff" in run.stderr
    assert "Traceback" not in run.stderr
