"""Semantic checks and the compiled result: patterns, hints, thresholds, tools, tests."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from policy.language.loader import check_policy, load_policy
from policy.model.compiled import CompiledPolicy, ErrorStreakRule, FrequencyRule, OscillationRule, RepeatRule
from policy.model.diagnostics import Diagnostic, Severity

WRITER = "tool write_file { writes path=path content=content append=append }\n"


def check(tmp_path: Path, text: str, name: str = "p.policy") -> list[Diagnostic]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return check_policy(path).diagnostics


def only(tmp_path: Path, text: str) -> Diagnostic:
    [diagnostic] = check(tmp_path, text)
    return diagnostic


def compiled(tmp_path: Path, text: str) -> CompiledPolicy:
    path = tmp_path / "ok.policy"
    path.write_text(text, encoding="utf-8")
    return load_policy(path)


# --- patterns ---------------------------------------------------------------


def test_regex_flags_compile_to_re2_options(tmp_path: Path) -> None:
    policy = compiled(tmp_path, "signature S { match /^error: (?P<what>.+)$/im }\n")
    [signature] = policy.signatures
    assert signature.pattern.flags == "im"
    assert signature.pattern.groups == ("what",)
    assert signature.pattern.search("ok\nERROR: Disk").group("what") == "Disk"


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"(a)\1", "a backreference (`\\1`)"),
        (r"foo(?=bar)", "a lookaround assertion"),
        (r"foo(?!bar)", "a lookaround assertion"),
        (r"(?<=foo)bar", "a lookaround assertion"),
        (r"a*+", "a possessive quantifier"),
        (r"(?>ab)", "an atomic group"),
    ],
)
def test_backtracking_constructs_are_e202(tmp_path: Path, pattern: str, construct: str) -> None:
    diagnostic = only(tmp_path, f"signature S {{ match /{pattern}/ }}\n")
    assert diagnostic.code == "E202"
    assert diagnostic.message == f"pattern not supported by the linear-time engine: {construct}"


@pytest.mark.parametrize("pattern", [r"(", r"a{2,1}", r"[z-a]", r"x**"])
def test_invalid_patterns_are_e201(tmp_path: Path, pattern: str) -> None:
    diagnostic = only(tmp_path, f"signature S {{ match /{pattern}/ }}\n")
    assert diagnostic.code == "E201"
    assert diagnostic.span.line == 1 and diagnostic.span.column == 21


def test_an_unknown_regex_flag_is_e201(tmp_path: Path) -> None:
    diagnostic = only(tmp_path, "signature S { match /x/g }\n")
    assert (diagnostic.code, diagnostic.message) == ("E201", "unknown regex flag `g`")


@pytest.mark.parametrize("glob", ["", "  ", "[abc", "src/[!x"])
def test_invalid_globs_are_e203(tmp_path: Path, glob: str) -> None:
    diagnostic = only(tmp_path, WRITER + f'gate g {{ files "*.py" "{glob}"; check python }}\n')
    assert diagnostic.code == "E203"


def test_valid_globs_pass(tmp_path: Path) -> None:
    policy = compiled(tmp_path, WRITER + 'gate g { files "*.py" "[]]x" "src/[!_]*.json"; check json }\n')
    assert policy.gates[0].globs == ("*.py", "[]]x", "src/[!_]*.json")


@pytest.mark.parametrize(
    ("replacement", "fragment"),
    [
        (r"\\2", "refers to group 2, but the pattern has 1 group"),
        (r"\\g<nope>", "refers to group `nope`"),
        (r"\\x", "invalid escape"),
    ],
)
def test_bad_normalize_replacements(tmp_path: Path, replacement: str, fragment: str) -> None:
    diagnostic = only(tmp_path, f'normalize /(?P<n>\\d+)/ "{replacement}"\n')
    assert diagnostic.code == "E107"
    assert fragment in diagnostic.message


def test_a_replacement_may_hold_any_text(tmp_path: Path) -> None:
    text = 'normalize /\\d+(\\.\\d+)?s/ "<durée …>"\nnormalize /日付:\\S+/ "日付:\\u2026"\n'
    policy = compiled(tmp_path, text)
    assert policy.normalize("fini en 0.5s, 日付:2024") == "fini en <durée …>, 日付:…"


def test_normalizers_apply_with_group_references(tmp_path: Path) -> None:
    policy = compiled(tmp_path, 'normalize /(\\w+)=\\d+/ "\\\\1=<n>"\nnormalize /\\\\141/ "\\\\141"\n')
    assert policy.normalize("took=35 ms") == "took=<n> ms"


# --- hints ------------------------------------------------------------------


def test_an_unknown_hint_suggests_the_closest(tmp_path: Path) -> None:
    diagnostic, unused = check(tmp_path, 'signature S { match /x/; hint modul }\nhint module "m"\n')
    assert (diagnostic.code, diagnostic.span.column) == ("E301", 31)
    assert unused.code == "W103"
    assert diagnostic.help is not None and diagnostic.help.startswith("did you mean `module`?")


def test_a_variable_the_rule_does_not_provide_is_e302(tmp_path: Path) -> None:
    text = WRITER + 'gate g { files "*.py"; check python; hint h }\nhint h "{{ path }} {{ count }}"\n'
    diagnostic = only(tmp_path, text)
    assert diagnostic.code == "E302"
    assert diagnostic.message == "hint `h` uses `count`, which gate rules do not provide"
    assert diagnostic.span.line == 2


def test_a_hint_shared_by_two_rules_must_suit_both(tmp_path: Path) -> None:
    text = (
        "signature A { match /(?P<module>x)/; hint h }\n"
        "signature B { match /(?P<port>x)/; hint h }\n"
        'hint h "{{ module }}"\n'
    )
    diagnostics = check(tmp_path, text)
    assert [(d.code, d.span.line, d.span.column) for d in diagnostics] == [("W101", 2, 21), ("E302", 2, 41)]


def test_signature_groups_are_hint_variables(tmp_path: Path) -> None:
    policy = compiled(
        tmp_path, 'signature S { match /(?P<module>\\w+)/; hint h }\nhint h "{{ module | pip_name }}"\n'
    )
    assert policy.signatures[0].hint is policy.hints["h"]
    assert policy.signatures[0].key == ("module",)


def test_a_group_no_hint_uses_is_w101(tmp_path: Path) -> None:
    text = 'signature S { match /(?P<module>\\w+) (?P<extra>\\w+)/; hint h }\nhint h "{{ module }}"\n'
    diagnostic = only(tmp_path, text)
    assert (diagnostic.code, diagnostic.severity) == ("W101", Severity.WARNING)
    assert "`extra`" in diagnostic.message


def test_a_group_named_in_the_key_or_reached_through_captures_is_used(tmp_path: Path) -> None:
    text = (
        'signature S { match /(?P<module>\\w+) (?P<extra>\\w+)/; key extra; hint h }\nhint h "{{ module }}"\n'
        'signature T { match /(?P<a>\\w+)/; hint all }\nhint all "{{ captures }}"\n'
    )
    assert check(tmp_path, text) == []


def test_key_must_name_groups_of_the_pattern(tmp_path: Path) -> None:
    diagnostic = only(tmp_path, "signature S { match /(?P<module>\\w+)/; key modul }\n")
    assert diagnostic.code == "E107"
    assert diagnostic.help is not None and diagnostic.help.startswith("did you mean `module`?")


def test_an_unused_hint_is_w103(tmp_path: Path) -> None:
    diagnostic = only(tmp_path, 'hint spare "nothing uses me"\n')
    assert (diagnostic.code, diagnostic.span.column) == ("W103", 6)


def test_template_syntax_errors_point_at_the_template_line(tmp_path: Path) -> None:
    text = 'signature S { match /x/; hint h }\nhint h """\n  first line\n  {% if %}\n  """\n'
    diagnostic = only(tmp_path, text)
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("E303", 4, 3)


def test_a_template_syntax_error_in_a_hint_file_points_into_that_file(tmp_path: Path) -> None:
    (tmp_path / "hints").mkdir()
    (tmp_path / "hints" / "bad.j2").write_text("ok\n{{ x | no_such_filter }}\n")
    diagnostic = only(tmp_path, 'signature S { match /x/; hint h }\nhint h file "bad.j2"\n')
    assert diagnostic.code == "E303"
    assert (Path(diagnostic.span.file).name, diagnostic.span.line) == ("bad.j2", 2)
    assert "no_such_filter" in diagnostic.message


def test_hint_files_are_found_beside_the_policy_first(tmp_path: Path) -> None:
    (tmp_path / "hints").mkdir()
    (tmp_path / "hints" / "module_not_found.j2").write_text("team text for {{ module }}\n")
    text = 'signature S { match /(?P<module>\\w+)/; hint a; }\nhint a file "module_not_found.j2"\n'
    text += 'signature T { match /(?P<command>\\w+)/; hint b }\nhint b file "command_not_found.j2"\n'
    policy = compiled(tmp_path, text)
    assert policy.hints["a"].source == "team text for {{ module }}\n"
    assert "{{ command }}" in policy.hints["b"].source


def test_a_missing_hint_file_is_e304(tmp_path: Path) -> None:
    diagnostic = only(tmp_path, 'signature S { match /x/; hint h }\nhint h file "nope.j2"\n')
    assert (diagnostic.code, diagnostic.span.line) == ("E304", 2)


# --- thresholds -------------------------------------------------------------


@pytest.mark.parametrize(
    ("loop", "code"),
    [
        ("repeat { warn 5; stop 5 }", "E401"),
        ("repeat { warn 0; stop 5 }", "E402"),
        ("repeat { warn 3; stop -1 }", "E402"),
        ("repeat { window 2; warn 3; stop 5 }", "E402"),
        ("repeat { window 4; warn 3; stop 5 }", "E402"),
        ("frequency { window 2; warn 3; stop 5 }", "E402"),
        ("frequency { warn 3; stop 5; tool bash { warn 9; stop 9 } }", "E401"),
        ("error_streak { warn 6; stop 3 }", "E401"),
        ("oscillation { period 1..3; repeats 2 }", "E402"),
        ("oscillation { period 4..3; repeats 2 }", "E402"),
        ("oscillation { period 2..3; repeats 1 }", "E402"),
        ("repeat { warn 3 }", "E104"),
        ("oscillation { repeats 2 }", "E104"),
        ("frequency { warn 3; stop 5; tool bash { warn 9 } }", "E104"),
    ],
)
def test_threshold_errors(tmp_path: Path, loop: str, code: str) -> None:
    assert only(tmp_path, f"loop {loop}\n").code == code


def test_loop_rules_compile_with_their_defaults(tmp_path: Path) -> None:
    text = (
        "loop repeat { warn 3; stop 5; until_progress }\n"
        "loop frequency { window 100; warn 30; stop 50; tool bash { warn 150; stop 300 } }\n"
        "loop error_streak { warn 3; stop 6; same signature }\n"
        "loop oscillation { period 2..4; repeats 2; no_progress; stop }\n"
    )
    policy = compiled(tmp_path, text)
    repeat, frequency = policy.loop(RepeatRule), policy.loop(FrequencyRule)
    error_streak, oscillation = policy.loop(ErrorStreakRule), policy.loop(OscillationRule)
    assert repeat is not None and (repeat.window, repeat.until_progress) == (20, True)
    assert frequency is not None and frequency.window == 300
    assert frequency.limit_for("bash").stop == 300 and frequency.limit_for("ls").warn == 30
    assert error_streak is not None and error_streak.same_captures is False
    assert oscillation is not None
    assert (oscillation.min_period, oscillation.max_period, oscillation.action) == (
        2,
        4,
        "stop",
    )
    assert str(repeat.ref) == "loop repeat"


def test_policy_settings_out_of_range(tmp_path: Path) -> None:
    text = 'policy "p" { scope { max_scopes 0 }; scan_limit 0 }\n'
    assert [d.code for d in check(tmp_path, text)] == ["E402", "E402"]


# --- tools and gates ----------------------------------------------------------


def test_role_fields_are_checked(tmp_path: Path) -> None:
    diagnostics = check(tmp_path, "tool w { writes path=p contnt=c }\n")
    assert [(d.code, d.span.column) for d in diagnostics] == [("E104", 10), ("E502", 24)]
    assert diagnostics[1].help is not None and diagnostics[1].help.startswith("did you mean `content`?")


def test_tool_specs(tmp_path: Path) -> None:
    text = (
        'policy "p" { ignore description; key path command }\n'
        "tool str_replace { edits path=path old=old_str new=new_str all=replace_all; key * }\n"
        "tool bash { runs command=command; ignore; mutates_when /pip install/; fails_when /Traceback/ }\n"
    )
    policy = compiled(tmp_path, text)
    edit, bash = policy.tools["str_replace"], policy.tools["bash"]
    assert (edit.role, dict(edit.args)) == (
        "edit",
        {"path": "path", "old": "old_str", "new": "new_str", "all": "replace_all"},
    )
    assert edit.key_args is None and edit.ignore_args == frozenset({"description"})
    assert bash.ignore_args == frozenset() and bash.key_args == ("path", "command")
    assert bash.mutates_when is not None and bash.mutates_when.search("pip install x")
    assert policy.tool("ls").key_args == ("path", "command")


def test_key_star_stands_alone(tmp_path: Path) -> None:
    assert only(tmp_path, "tool t { key * path }\n").code == "E107"


def test_gates_compile(tmp_path: Path) -> None:
    text = WRITER + 'gate sh { files "*.sh"; check command "bash -n {file}"; timeout 2.5; partial allow }\n'
    [gate] = compiled(tmp_path, text).gates
    assert (gate.validator.kind, gate.validator.command, gate.validator.timeout) == (
        "command",
        "bash -n {file}",
        2.5,
    )
    assert gate.partial is True and str(gate.ref) == "gate sh"


@pytest.mark.parametrize("command", ["", "  ", "bash -n '{file}"])
def test_a_checker_command_must_split_into_words(tmp_path: Path, command: str) -> None:
    assert only(tmp_path, WRITER + f'gate sh {{ files "*.sh"; check command "{command}" }}\n').code == "E107"


def test_a_checker_command_without_placeholder_gets_the_file_last(tmp_path: Path) -> None:
    [gate] = compiled(tmp_path, WRITER + 'gate sh { files "*.sh"; check command "bash -n" }\n').gates
    assert gate.validator.command == "bash -n"


def test_a_gate_without_a_writing_tool_is_w102(tmp_path: Path) -> None:
    diagnostic = only(tmp_path, 'gate g { files "*.py"; check python }\n')
    assert (diagnostic.code, diagnostic.severity) == ("W102", Severity.WARNING)


def test_missing_required_settings(tmp_path: Path) -> None:
    diagnostics = check(tmp_path, WRITER + "gate g { partial allow }\nsignature S { on any }\n")
    assert [(d.code, d.message) for d in diagnostics] == [
        ("E104", "gate `g` needs `files`"),
        ("E104", "gate `g` needs `check`"),
        ("E104", "signature `S` needs `match`"),
    ]


# --- tests ------------------------------------------------------------------


def test_test_steps_compile(tmp_path: Path) -> None:
    text = WRITER + (
        "tool bash { runs command=command }\n"
        'test "t" {\n'
        '  file "a.py" "x = 1\\n"\n'
        '  turn { call bash { "command": "ls", "n": [1, null, true] }; call write_file {} }\n'
        '  result error "boom"\n'
        "  repeat 3 { call bash {} }\n"
        "  expect warn loop repeat\n"
        '  expect hint contains "boom"\n'
        "  expect hint matches /bo+m/i\n"
        "}\n"
        "loop repeat { warn 3; stop 5 }\n"
    )
    [test] = compiled(tmp_path, text).tests
    kinds = [step.kind for step in test.steps]
    assert kinds == ["file", "turn", "result", "turn", "turn", "turn", "expect", "expect", "expect"]
    turn = test.steps[1]
    assert [c.name for c in turn.calls] == ["bash", "write_file"]
    assert turn.calls[0].args == {"command": "ls", "n": [1, None, True]} and turn.calls[1].args == {}
    assert (test.steps[2].status, test.steps[2].content) == ("error", "boom")
    assert (test.steps[6].action, test.steps[6].rule) == ("warn", "loop repeat")
    assert test.steps[7].hint_contains == "boom"
    assert test.steps[8].hint_matches is not None and test.steps[8].hint_matches.search("BOOOM")


@pytest.mark.parametrize(
    ("steps", "code"),
    [
        ("call wirte_file {}; expect allow", "E701"),
        ('call write_file { "path": yes }; expect allow', "E702"),
        ("call write_file; expect allow", "E103"),
        ("call write_file [1]; expect allow", "E103"),
        ('result ok "x"; call write_file {}; expect allow', "E703"),
        ("call write_file {}", "E703"),
        ("call write_file {}; expect block gate nope", "E703"),
        ("call write_file {}; expect allow gate g", "E703"),
        ("repeat 0 { call write_file {} }; expect allow", "E703"),
        ("repeat 100000 { call write_file {} }; expect allow", "E703"),
        ('turn { file "a" "b" }; expect allow', "E703"),
        ('call write_file {}; expect hint contain "x"', "E107"),
        ("cal write_file {}; expect allow", "E102"),
    ],
)
def test_test_step_errors(tmp_path: Path, steps: str, code: str) -> None:
    text = WRITER + 'gate g { files "*.py"; check python }\n' + f'test "t" {{ {steps} }}\n'
    assert [d.code for d in check(tmp_path, text)] == [code]


def test_expect_contain_suggests_contains(tmp_path: Path) -> None:
    diagnostic = only(tmp_path, WRITER + 'test "t" { call write_file {}; expect hint contain "x" }\n')
    assert diagnostic.help is not None and diagnostic.help.startswith("did you mean `contains`?")


# --- the compiled policy --------------------------------------------------------


def test_the_compiled_policy_is_immutable(tmp_path: Path) -> None:
    policy = compiled(tmp_path, WRITER)
    with pytest.raises(AttributeError):
        policy.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        policy.tools["x"] = policy.tools["write_file"]  # type: ignore[index]


def test_loading_from_several_threads_at_once_gives_equal_policies() -> None:
    results: list[CompiledPolicy] = []

    def load() -> None:
        results.append(load_policy("builtin:default"))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    assert len({(p.name, len(p.gates), len(p.signatures), len(p.hints)) for p in results}) == 1
