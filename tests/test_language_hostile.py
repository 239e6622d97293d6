"""Hostile policies (issue 16): nothing outside the policy's tree is read or printed, checking stays
near-linear and never crashes, and line endings do not change meaning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import re2
from click.testing import CliRunner

from cli.main import policyctl
from policy.language import compose as compose_module
from policy.language import parser as parser_module
from policy.language.compose import MAX_EXTENDS_DEPTH
from policy.language.loader import check_policy, load_policy
from policy.language.patterns import MAX_PROGRAM_SIZE
from policy.model import re2_spans
from policy.model.re2_spans import compile_re2
from policy.resources import data_dir

SECRET = "user:ghp_SECRET123@host"


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _codes(path: Path) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.column) for d in check_policy(path).diagnostics]


# --- finding 4: nothing outside the policy's tree is read or printed ------------------------------

def test_extends_of_a_file_that_is_not_a_policy_is_refused_unread(tmp_path: Path) -> None:
    _write(tmp_path, "secret.txt", SECRET + "\n")
    team = _write(tmp_path, "team.policy", 'extends "secret.txt"\n')
    result = CliRunner().invoke(policyctl, ["lint", str(team)])
    assert "E601" in result.output and "not a policy file" in result.output
    assert "ghp_SECRET123" not in result.output


def test_extends_of_proc_environ_is_refused_unread(tmp_path: Path) -> None:
    team = _write(tmp_path, "team.policy", 'extends "/proc/self/environ"\n')
    result = CliRunner().invoke(policyctl, ["lint", str(team)], env={"CI_TOKEN": "tok-do-not-print"})
    assert "E601" in result.output and "tok-do-not-print" not in result.output


def test_a_hint_file_outside_the_tree_is_refused_and_test_prints_nothing_of_it(tmp_path: Path) -> None:
    team = _write(tmp_path, "repo/team.policy", (
        'tool bash { runs command=command }\n'
        'signature S { match /boom/; hint h }\n'
        'hint h file "../../../../../../../../proc/self/environ"\n'
        'test "t" { call bash {}; result error "boom"; expect hint signature S }\n'))
    assert ("E604", 3, 13) in _codes(team)
    result = CliRunner().invoke(policyctl, ["test", str(team)], env={"CI_TOKEN": "tok-do-not-print"})
    assert result.exit_code == 2 and "tok-do-not-print" not in result.output


def test_a_symlink_leaving_the_tree_is_refused_where_it_is_named(tmp_path: Path) -> None:
    _write(tmp_path, "outside/base.policy", "tool bash { runs command=command }\n")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "base.policy").symlink_to(tmp_path / "outside" / "base.policy")
    team = _write(tmp_path, "repo/team.policy", 'policy "t" {}\nextends "base.policy"\n')
    assert _codes(team) == [("E604", 2, 9)]


def test_excerpts_show_only_files_read_as_policies(tmp_path: Path) -> None:
    team = _write(tmp_path, "team.policy", "loop repeat { warn 3 stop 5 }\n")
    result = CliRunner().invoke(policyctl, ["lint", str(team)])
    assert "1 | loop repeat { warn 3 stop 5 }" in result.output


def test_a_huge_hint_file_is_refused_unread(tmp_path: Path) -> None:
    _write(tmp_path, "hints/huge.j2", "x" * (300 * 1024))
    team = _write(tmp_path, "team.policy", 'tool bash { runs command=command }\n'
                  'signature S { match /boom/; hint h }\nhint h file "huge.j2"\n')
    [diagnostic] = check_policy(team).diagnostics
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("E304", 3, 13)
    assert "larger than 256 KiB" in diagnostic.message


def _outside_base_and_hint(tmp_path: Path) -> Path:
    """A policy whose base and hint template lie in shared folders beside its own tree."""
    _write(tmp_path, "shared/policies/base.policy", (
        'tool bash { runs command=command }\n'
        'signature S { match /boom/; hint h }\n'))
    _write(tmp_path, "shared/hints/boom.j2", "It went boom.\n")
    (tmp_path / "repo" / "hints").mkdir(parents=True)
    return _write(tmp_path, "repo/team.policy", (
        'extends "../shared/policies/base.policy"\n'
        'hint h file "../../shared/hints/boom.j2"\n'
        'test "t" { call bash {}; result error "boom"; expect hint contains "went boom" }\n'))


def test_allow_path_lets_extends_and_hint_files_name_another_folder(tmp_path: Path) -> None:
    team = _outside_base_and_hint(tmp_path)
    refused = subprocess.run([sys.executable, "-m", "cli", "lint", str(team)], capture_output=True, text=True,
                             check=False)
    assert refused.returncode == 1 and "team.policy:1:9: error[E604]" in refused.stdout
    assert "--allow-path" in refused.stdout
    allowed = subprocess.run([sys.executable, "-m", "cli", "lint", "--allow-path", str(tmp_path / "shared"),
                              str(team)], capture_output=True, text=True, check=False)
    assert allowed.returncode == 0, allowed.stdout


def test_each_allowed_folder_allows_only_its_own_files(tmp_path: Path) -> None:
    team = _outside_base_and_hint(tmp_path)
    policies, hints = tmp_path / "shared" / "policies", tmp_path / "shared" / "hints"
    only_policies = check_policy(team, allow_paths=[policies]).diagnostics
    assert [(d.code, d.span.line, d.span.column) for d in only_policies] == [("E604", 2, 13)]
    assert check_policy(team, allow_paths=[policies, hints]).ok
    assert load_policy(team, allow_paths=[tmp_path / "shared"]).tests


def test_test_and_replay_take_allow_path_too(tmp_path: Path) -> None:
    team = _outside_base_and_hint(tmp_path)
    shared = str(tmp_path / "shared")
    assert CliRunner().invoke(policyctl, ["test", str(team)]).exit_code == 2
    tested = CliRunner().invoke(policyctl, ["test", "--allow-path", shared, str(team)])
    assert tested.exit_code == 0 and "1 passed" in tested.output
    call = '{"turn": [{"id": "c1", "name": "bash", "args": {"command": "x"}}]}\n'
    trace = str(_write(tmp_path, "t.jsonl", call))
    assert CliRunner().invoke(policyctl, ["replay", "--policy", str(team), trace]).exit_code == 2
    replayed = CliRunner().invoke(policyctl, ["replay", "--allow-path", shared, "--policy", str(team), trace])
    assert replayed.exit_code == 0, replayed.output


# --- finding 8: near-linear checks, located diagnostics, no traceback ------------------------------

def test_a_diamond_of_bases_reads_and_merges_each_file_once(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    levels = MAX_EXTENDS_DEPTH - 2  # 18 levels took 9.7 s before, 40 never finished
    _write(tmp_path, "l0a.policy", "tool bash { runs command=command }\n")
    _write(tmp_path, "l0b.policy", "tool sh { runs command=command }\n")
    for level in range(1, levels):
        for side in "ab":
            _write(tmp_path, f"l{level}{side}.policy",
                   f'extends "l{level - 1}a.policy"\nextends "l{level - 1}b.policy"\n')
    last = levels - 1
    top = _write(tmp_path, "top.policy", f'extends "l{last}a.policy"\nextends "l{last}b.policy"\n')
    parsed: list[str] = []
    real_parse = compose_module.parse

    def counting(text: str, path: str) -> object:
        parsed.append(path)
        return real_parse(text, path)

    monkeypatch.setattr(compose_module, "parse", counting)
    assert check_policy(top).ok
    assert len(parsed) == len(set(parsed)) == 2 * levels + 1


def test_a_long_extends_chain_is_a_located_diagnostic(tmp_path: Path) -> None:
    for index in range(500):
        _write(tmp_path, f"p{index}.policy", f'extends "p{index + 1}.policy"\n')
    _write(tmp_path, "p500.policy", "tool bash { runs command=command }\n")
    diagnostics = check_policy(tmp_path / "p0.policy").diagnostics
    assert [d.code for d in diagnostics] == ["E605"]
    assert diagnostics[0].span.file.endswith(f"p{MAX_EXTENDS_DEPTH - 1}.policy")


def test_a_huge_number_is_a_diagnostic(tmp_path: Path) -> None:
    team = _write(tmp_path, "t.policy", 'tool bash { runs command=command }\n'
                  'test "t" { repeat 99999999999999999999 { call bash {} }; expect allow }\n')
    assert _codes(team) == [("E007", 2, 19)]
    result = CliRunner().invoke(policyctl, ["test", str(team)])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_long_bad_line_is_recovered_from_a_bounded_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    placed: list[object] = []
    real = parser_module._syntax_diagnostic
    monkeypatch.setattr(parser_module, "_syntax_diagnostic",
                        lambda *args: placed.append(args) or real(*args))
    team = _write(tmp_path, "t.policy", "loop repeat { warn 3; stop 5 }\n" + "@" * 128_000 + "\n")
    diagnostics = check_policy(team).diagnostics
    assert diagnostics and all(d.code == "E003" for d in diagnostics)
    assert len(placed) <= parser_module.MAX_RECOVERIES


def test_test_and_replay_read_the_policy_once_for_all_its_diagnostics(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = _write(tmp_path, "t.policy", "".join(f"gaet{i} python {{ }}\n" for i in range(2000)))
    reads: list[Path] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        reads.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    trace = _write(tmp_path, "t.jsonl", '{"turn": [{"id": "c1", "name": "bash", "args": {}}]}\n')
    for command in (["test", str(team)], ["replay", "--policy", str(team), str(trace)]):
        reads.clear()
        result = CliRunner().invoke(policyctl, command)
        assert result.exit_code == 2 and result.output.count("E101") == 2000, command
        assert [path for path in reads if path.name == "t.policy"] == [team], command


# --- finding 7: patterns that RE2 runs slowly are refused ----------------------------------------

def test_a_signature_with_thousands_of_groups_is_refused(tmp_path: Path) -> None:
    groups = "".join(f"(?P<g{i}>a)?" for i in range(5000))
    team = _write(tmp_path, "t.policy", f"signature S {{ match /{groups}x/ }}\n")
    assert [code for code, _, _ in _codes(team)] == ["E204"]


def test_re2_memory_budget_is_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pattern = "[a-z]{1000}"  # 1,004 instructions: under E205's limit, over a 4 KiB budget
    assert re2.compile(pattern).programsize < MAX_PROGRAM_SIZE  # RE2's own options accept it
    team = _write(tmp_path, "t.policy", f"signature S {{ match /{pattern}/ }}\n")
    monkeypatch.setattr(re2_spans, "MAX_MEMORY", 4096)
    re2_spans._options.cache_clear()
    try:
        diagnostics = check_policy(team).diagnostics
    finally:
        monkeypatch.undo()
        re2_spans._options.cache_clear()
    assert [(d.code, "a pattern this large" in d.message) for d in diagnostics] == [("E202", True)]
    assert compile_re2(pattern).options.max_mem == re2_spans.MAX_MEMORY


# --- finding 9: CRLF does not change meaning --------------------------------------------------------

def test_the_default_policy_with_crlf_line_endings_passes_its_own_tests(tmp_path: Path) -> None:
    text = (data_dir("policies") / "default.policy").read_bytes().replace(b"\r\n", b"\n")
    crlf = tmp_path / "default.policy"
    crlf.write_bytes(text.replace(b"\n", b"\r\n"))
    result = CliRunner().invoke(policyctl, ["test", str(crlf)])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.output


def test_a_text_value_reads_the_same_with_either_line_ending(tmp_path: Path) -> None:
    body = 'hint h """\n  one\n  two\n  """\nsignature S { match /x/; hint h }\n'
    values = []
    for ending in ("\n", "\r\n"):
        path = tmp_path / f"{len(ending)}.policy"
        path.write_bytes(body.replace("\n", ending).encode())
        policy = check_policy(path).policy
        assert policy is not None
        values.append(policy.hints["h"].source)
    assert values[0] == values[1] == "one\ntwo\n"
