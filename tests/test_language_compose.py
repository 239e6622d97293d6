"""``extends`` and ``disable``: bases load first, overlays merge block by block (E601 to E603)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy.language.loader import check_policy, load_policy
from policy.model.compiled import RepeatRule
from policy.model.diagnostics import PolicyError
from policy.resources import builtin_policy_names, builtin_policy_path

BASE = """\
policy "base" {
  description "the base"
  scan_limit 64KB
  ignore description
}
tool write_file { writes path=path content=content append=append }
tool bash { runs command=command }
gate python { files "*.py"; check python; partial allow; hint base_hint }
signature MOD { match /No module named '(?P<module>[\\w.]+)'/; hint mod }
signature PORT { match /port (?P<port>\\d+) in use/; hint port }
normalize /\\d+ms/ "<dur>"
loop repeat { window 20; warn 3; stop 5; until_progress }
hint base_hint "{{ path }} line {{ line }}: {{ message }}"
hint mod "install {{ module }}"
hint port "port {{ port }} is taken"
test "base test" { call bash { "command": "ls" }; expect allow }
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_an_overlay_replaces_only_the_settings_it_gives(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    team = write(tmp_path, "team.policy", 'extends "base.policy"\ngate python { partial block }\n')
    policy = load_policy(team)
    [gate] = policy.gates
    assert gate.partial is False
    assert gate.globs == ("*.py",)
    assert gate.hint is not None and gate.hint.name == "base_hint"
    assert gate.ref.span is not None and gate.ref.span.file == str(team)


def test_the_header_merges_setting_by_setting(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    team = write(tmp_path, "team.policy", 'extends "base.policy"\npolicy "team" { scan_limit 1KB }\n')
    policy = load_policy(team)
    assert (policy.name, policy.description, policy.scan_limit) == ("team", "the base", 1024)
    assert policy.default_ignore_args == frozenset({"description"})


def test_a_policy_without_a_header_is_named_after_its_file(tmp_path: Path) -> None:
    assert (
        load_policy(write(tmp_path, "my-rules.policy", "tool bash { runs command=command }\n")).name
        == "my-rules"
    )


def test_new_rules_are_appended_and_hints_replaced(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    text = (
        'extends "base.policy"\n'
        "signature DISK { match /No space left/; hint disk }\n"
        'hint disk "free some space"\n'
        'hint mod "pip install {{ module | pip_name }}"\n'
        'normalize /0x[0-9a-f]+/ "<addr>"\n'
    )
    policy = load_policy(write(tmp_path, "team.policy", text))
    assert [s.ref.name for s in policy.signatures] == ["MOD", "PORT", "DISK"]
    assert policy.hints["mod"].source == "pip install {{ module | pip_name }}"
    assert [n.replacement for n in policy.normalizers] == ["<dur>", "<addr>"]
    assert policy.sources == (str(tmp_path / "base.policy"), str(tmp_path / "team.policy"))


def test_disable_removes_a_rule_of_the_bases(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    text = 'extends "base.policy"\ndisable signature PORT\ndisable hint port\ndisable loop repeat\n'
    policy = load_policy(write(tmp_path, "team.policy", text))
    assert [s.ref.name for s in policy.signatures] == ["MOD"]
    assert "port" not in policy.hints
    assert policy.loop(RepeatRule) is None


def test_disable_then_declare_replaces_a_rule_whole(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    text = 'extends "base.policy"\ndisable loop repeat\nloop repeat { warn 2; stop 4 }\n'
    repeat = load_policy(write(tmp_path, "team.policy", text)).loop(RepeatRule)
    assert repeat is not None
    assert (repeat.window, repeat.warn, repeat.stop, repeat.until_progress) == (20, 2, 4, False)


def test_disable_of_a_missing_rule_suggests_one(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    team = write(tmp_path, "team.policy", 'extends "base.policy"\ndisable signature PROT\n')
    [diagnostic] = check_policy(team).diagnostics
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("E603", 2, 19)
    assert diagnostic.help is not None and diagnostic.help.startswith("did you mean `PORT`?")


def test_disabling_a_rule_the_file_itself_declares_is_an_error(tmp_path: Path) -> None:
    text = "tool bash { runs command=command }\ndisable tool bash\n"
    assert [d.code for d in check_policy(write(tmp_path, "p.policy", text)).diagnostics] == ["E603"]


def test_a_disabled_tool_leaves_its_tests_and_gates_without_a_writer(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    text = 'extends "base.policy"\ndisable tool write_file\ntest "t" { call write_file {}; expect allow }\n'
    diagnostics = check_policy(write(tmp_path, "team.policy", text)).diagnostics
    assert [(d.code, Path(d.span.file).name) for d in diagnostics] == [("E701", "team.policy")]


def test_only_the_files_own_tests_are_kept(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    team = write(
        tmp_path, "team.policy", 'extends "base.policy"\ntest "mine" { call bash {}; expect allow }\n'
    )
    assert [t.name for t in load_policy(team).tests] == ["mine"]
    assert [t.name for t in load_policy(tmp_path / "base.policy").tests] == ["base test"]


def test_several_bases_apply_in_order(tmp_path: Path) -> None:
    write(tmp_path, "a.policy", 'policy "a" { scan_limit 1KB; description "from a" }\n')
    write(tmp_path, "b.policy", 'policy "b" { scan_limit 2KB }\n')
    policy = load_policy(write(tmp_path, "c.policy", 'extends "a.policy"\nextends "b.policy"\n'))
    assert (policy.name, policy.scan_limit, policy.description) == ("b", 2048, "from a")


def test_a_diamond_reads_the_shared_base_once(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", BASE)
    write(tmp_path, "left.policy", 'extends "base.policy"\n')
    write(tmp_path, "right.policy", 'extends "base.policy"\n')
    policy = load_policy(write(tmp_path, "top.policy", 'extends "left.policy"\nextends "right.policy"\n'))
    assert len(policy.normalizers) == 1
    assert len(policy.sources) == 4


def test_extends_is_relative_to_the_file_that_names_it(tmp_path: Path) -> None:
    write(tmp_path, "shared/base.policy", BASE)
    write(tmp_path, "shared/team.policy", 'extends "base.policy"\n')
    app = write(tmp_path, "repo/app.policy", 'extends "../shared/team.policy"\n')
    policy = check_policy(app, allow_paths=[tmp_path / "shared"]).policy  # outside repo/: allowed explicitly
    assert policy is not None and [g.ref.name for g in policy.gates] == ["python"]
    [outside] = check_policy(app).diagnostics
    assert (outside.code, outside.span.line, outside.span.column) == ("E604", 1, 9)


def test_a_missing_base_is_reported_at_the_extends(tmp_path: Path) -> None:
    team = write(tmp_path, "team.policy", 'tool bash { runs command=command }\nextends "nope.policy"\n')
    [diagnostic] = check_policy(team).diagnostics
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("E601", 2, 9)
    assert "nope.policy" in diagnostic.message


def test_an_unknown_builtin_lists_the_builtins(tmp_path: Path) -> None:
    [diagnostic] = check_policy(write(tmp_path, "p.policy", 'extends "builtin:defualt"\n')).diagnostics
    assert diagnostic.code == "E601"
    assert diagnostic.help is not None and diagnostic.help.startswith("did you mean `default`?")


def test_a_missing_root_file_is_a_diagnostic_not_an_exception(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "absent.policy")
    assert [d.code for d in caught.value.diagnostics] == ["E601"]
    assert [d.code for d in check_policy("builtin:nope").diagnostics] == ["E601"]


def test_an_extends_cycle_is_reported_where_it_closes(tmp_path: Path) -> None:
    write(tmp_path, "a.policy", 'extends "b.policy"\n')
    write(tmp_path, "b.policy", 'tool x\nextends "a.policy"\n')
    [diagnostic] = check_policy(tmp_path / "a.policy").diagnostics
    assert (diagnostic.code, Path(diagnostic.span.file).name, diagnostic.span.line) == ("E602", "b.policy", 2)
    assert diagnostic.message == "extends cycle: a.policy → b.policy → a.policy"


def test_a_policy_extending_itself_is_a_cycle(tmp_path: Path) -> None:
    path = write(tmp_path, "self.policy", 'extends "self.policy"\n')
    assert [d.code for d in check_policy(path).diagnostics] == ["E602"]


def test_errors_in_a_base_point_into_the_base(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", "tool bash { runs command=command }\nloop repeat { warn 5; stop 3 }\n")
    diagnostics = check_policy(write(tmp_path, "team.policy", 'extends "base.policy"\n')).diagnostics
    assert [(d.code, Path(d.span.file).name, d.span.line) for d in diagnostics] == [
        ("E401", "base.policy", 2)
    ]


def test_a_syntax_error_in_a_base_stops_before_the_semantic_checks(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", "gate python {\n")
    text = 'extends "base.policy"\ngate python { hint nowhere }\n'
    diagnostics = check_policy(write(tmp_path, "team.policy", text)).diagnostics
    assert [(d.code, Path(d.span.file).name) for d in diagnostics] == [("E002", "base.policy")]


def test_warnings_are_reported_for_the_checked_file_only(tmp_path: Path) -> None:
    write(tmp_path, "base.policy", 'tool bash { runs command=command }\nhint spare "unused"\n')
    assert check_policy(write(tmp_path, "team.policy", 'extends "base.policy"\n')).diagnostics == []
    assert [d.code for d in check_policy(tmp_path / "base.policy").diagnostics] == ["W103"]


@pytest.mark.parametrize("name", builtin_policy_names())
def test_every_shipped_policy_is_clean(name: str) -> None:
    result = check_policy(f"builtin:{name}")
    assert result.diagnostics == []
    assert result.policy is not None
    assert result.policy.sources[-1] == str(builtin_policy_path(name))
