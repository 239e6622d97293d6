"""The structure checks of the language: declarations, settings, value forms (E101 to E107, E501)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.language.loader import check_policy
from policy.language.parser import parse
from policy.language.value_forms import form, resolve
from policy.model.diagnostics import Diagnostic

WRITER = "tool write_file { writes path=path content=content }\n"


def check(tmp_path: Path, text: str) -> list[Diagnostic]:
    path = tmp_path / "p.policy"
    path.write_text(text, encoding="utf-8")
    return check_policy(path).diagnostics


def codes(tmp_path: Path, text: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in check(tmp_path, text)]


def values_of(text: str) -> list:  # type: ignore[type-arg]
    tree, diagnostics = parse(f"x {text}\n", "t.policy")
    assert tree is not None, diagnostics
    return list(tree.statements[0].values)


@pytest.mark.parametrize(
    ("values", "forms", "fits"),
    [
        ("3", ["INT"], True),
        ("3.5", ["INT"], False),
        ("3.5", ["NUMBER"], True),
        ('"a" "b"', ["STRING+"], True),
        ("", ["STRING+"], False),
        ("", [""], True),
        ("x", [""], False),
        ('x file "a.j2"', ["NAME STRING", "NAME file STRING"], True),
        ('x "a"', ["NAME STRING", "NAME file STRING"], True),
        ("64KB", ["SIZE", "INT"], True),
        ("path=p content=c", ["PAIR+"], True),
        ("2..4", ["RANGE"], True),
    ],
)
def test_forms_accept_exactly_their_shapes(values: str, forms: list[str], fits: bool) -> None:
    assert (resolve(values_of(values), forms).form is not None) is fits


def test_a_word_outside_the_choices_is_reported_as_such() -> None:
    resolution = resolve(values_of("maybe"), ["allow|block"])
    assert resolution.form is None
    [(value, part)] = resolution.bad_choices
    assert value.span.column == 3
    assert part.choices == ("allow", "block")


def test_a_form_whose_keywords_were_written_is_the_one_meant() -> None:
    resolution = resolve(values_of("command"), ["command STRING", "python|json"])
    assert resolution.intended == form("command STRING")


def test_an_unknown_shape_in_a_form_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown shape"):
        form("INTEGER")


def test_unknown_declaration_suggests_the_closest(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, "sigature X { match /x/ }\n")
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("E101", 1, 1)
    assert diagnostic.help is not None and "did you mean `signature`?" in diagnostic.help


def test_unknown_loop_layer(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, "loop repeet { warn 3; stop 5 }\n")
    assert diagnostic.code == "E101"
    assert diagnostic.message == "unknown loop layer `repeet`"
    assert diagnostic.help is not None and "did you mean `repeat`?" in diagnostic.help


def test_unknown_setting_lists_the_valid_ones(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, "loop repeat { warn 3; stop 5; windw 20 }\n")
    assert diagnostic.code == "E102"
    assert diagnostic.help is not None
    assert diagnostic.help.startswith("did you mean `window`?")
    assert "`until_progress`" in diagnostic.help


def test_wrong_values_show_the_expected_shape(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, 'loop repeat { warn "3"; stop 5 }\n')
    assert diagnostic.code == "E103"
    assert diagnostic.message == "wrong values for `warn`: got a string"
    assert diagnostic.help == "expected: warn INT"
    assert (diagnostic.span.column, diagnostic.span.end_column) == (20, 23)


def test_several_statements_on_one_line_are_named_and_still_checked(tmp_path: Path) -> None:
    text = "loop repeat { window 20 warn 3 stop 5 until_progress hint nope }\n"
    diagnostics = check(tmp_path, text)
    assert [d.code for d in diagnostics] == ["E103", "E301"]
    assert diagnostics[0].message == (
        "several statements on one line: `window`, `warn`, `stop`, `until_progress`, `hint`"
    )
    assert diagnostics[0].help == "end each statement with `;` or a newline"


def test_a_run_on_line_that_cannot_be_split_gets_a_hint_about_separators(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, "loop repeat { warn 3 stop; stop 5 }\n")
    assert diagnostic.code == "E103"
    assert diagnostic.help is not None
    assert "`stop` starts another statement: end each statement with `;` or a newline" in diagnostic.help


def test_a_list_of_names_holding_a_sibling_setting_is_a_run_on_line(tmp_path: Path) -> None:
    text = WRITER + 'signature S { match /x/\n tools bash hint h }\nhint h "x"\n'
    [diagnostic] = check(tmp_path, text)
    assert (diagnostic.code, diagnostic.span.line) == ("E103", 3)
    assert diagnostic.message == "several statements on one line: `tools`, `hint`"
    assert diagnostic.help is not None and 'quote it: "hint"' in diagnostic.help


def test_an_argument_list_may_name_a_setting_when_the_split_makes_no_sense(tmp_path: Path) -> None:
    assert check(tmp_path, "tool kv { runs command=cmd; ignore key }\n") == []


def test_invalid_enum_value(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, WRITER + 'gate g { files "*.py"; check python; partial maybe }\n')
    assert (diagnostic.code, diagnostic.message) == ("E107", "invalid value `maybe` for `partial`")
    assert diagnostic.help == "expected one of: `allow`, `block`"


def test_unknown_validator(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, WRITER + 'gate g { files "*.py"; check pyton }\n')
    assert (diagnostic.code, diagnostic.message) == ("E501", "unknown validator `pyton`")
    assert diagnostic.help is not None and diagnostic.help.startswith("did you mean `python`?")


def test_a_command_checker_without_its_command_is_a_shape_error(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, WRITER + 'gate g { files "*.sh"; check command }\n')
    assert (diagnostic.code, diagnostic.help) == ("E103", "expected: check command STRING")


def test_duplicate_names_and_settings(tmp_path: Path) -> None:
    text = (
        WRITER
        + 'gate g { files "*.py"; check python; check json }\n'
        + 'gate g { files "*.json"; check json }\n'
        + 'policy "a"\npolicy "b"\n'
    )
    assert codes(tmp_path, text) == [("E106", 2), ("E105", 3), ("E105", 5)]


def test_a_tool_has_one_role(tmp_path: Path) -> None:
    [diagnostic] = check(tmp_path, "tool t { writes path=p content=c; runs command=c }\n")
    assert diagnostic.code == "E106"
    assert diagnostic.message == "`runs` conflicts with `writes` on line 1"


def test_oscillation_takes_warn_or_stop_as_a_bare_flag(tmp_path: Path) -> None:
    assert codes(tmp_path, "loop oscillation { period 2..3; repeats 2; stop }\n") == []
    assert codes(tmp_path, "loop oscillation { period 2..3; repeats 2; warn 3 }\n") == [("E103", 1)]


def test_blocks_where_none_belongs_and_missing_where_needed(tmp_path: Path) -> None:
    text = 'extends "x.policy" { }\npolicy "p" { scope }\n'
    diagnostics = check(tmp_path, text)
    assert [(d.code, d.message) for d in diagnostics] == [
        ("E103", "`extends` takes no `{ … }` block"),
        ("E103", "`scope` needs a `{ … }` block"),
    ]


def test_a_frequency_override_per_tool_is_keyed_by_tool(tmp_path: Path) -> None:
    text = (
        "loop frequency { warn 3; stop 5\n"
        "  tool bash { warn 10; stop 20 }\n"
        "  tool grep { warn 10; stop 20 }\n"
        "  tool bash { warn 1; stop 2 }\n}\n"
    )
    [diagnostic] = check(tmp_path, text)
    assert (diagnostic.code, diagnostic.span.line, diagnostic.message) == (
        "E106",
        4,
        "`tool bash` given twice",
    )
