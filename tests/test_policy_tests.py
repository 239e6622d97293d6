"""Policy ``test`` blocks: the runner's semantics, and ``policyctl test`` as a command.

Every case writes a real policy file and loads it with the real loader; the
command is run as a subprocess, the way CI runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent

import pytest
from click.testing import CliRunner

from cli import main
from policy.language import ast
from policy.language.loader import load_policy
from policy.language.parser import parse_bytes
from policy.model import compiled
from policy.model.events import ToolResult
from policy.resources import builtin_policy_names, builtin_policy_path
from policy.testing.runner import PolicyTestResult, run_test, run_tests

REPO = Path(__file__).resolve().parents[1]

HEADER = """
tool bash { runs command=command }
tool write_file { writes path=path content=content append=append }
tool str_replace { edits path=path old=old_str new=new_str all=replace_all }
gate python { files "*.py"; check python; partial allow; hint blocked }
signature MODULE_NOT_FOUND { match /No module named '(?P<module>[\\w.]+)'/; hint missing }
loop repeat { window 20; warn 3; stop 5; until_progress; hint looping }
hint blocked "blocked {{ path }} at line {{ line }}"
hint missing "install {{ module | pip_name }}"
hint looping "repeated {{ count }} times: {{ call }}"
"""


def write_policy(folder: Path, tests: str, name: str = "team.policy") -> Path:
    path = folder / name
    path.write_text(dedent(HEADER) + dedent(tests), encoding="utf-8")
    return path


def run_one(folder: Path, tests: str) -> PolicyTestResult:
    policy = load_policy(write_policy(folder, tests))
    (result,) = run_tests(policy)
    return result


def failures(result: PolicyTestResult) -> list[tuple[int | None, str, str]]:
    return [(f.line, f.expected, f.actual) for f in result.failures]


# --- the runner -------------------------------------------------------------------------------


def test_a_passing_test_passes_and_records_every_call(tmp_path: Path) -> None:
    result = run_one(tmp_path, """
        test "missing module" {
          call bash { "command": "python app.py" }
          result error "ModuleNotFoundError: No module named 'yaml'"
          expect hint signature MODULE_NOT_FOUND
          expect hint contains "install PyYAML"
          expect hint matches /^install \\w+$/
        }
        """)
    assert result.passed and result.failures == ()
    (record,) = result.calls
    assert record.call.name == "bash" and record.call.args == {"command": "python app.py"}
    assert record.result == ToolResult("ModuleNotFoundError: No module named 'yaml'", "error")
    assert record.decision.hint == "install PyYAML"


def test_a_failed_expectation_shows_expected_actual_and_the_hint(tmp_path: Path) -> None:
    result = run_one(tmp_path, """
        test "wrong expectations" {
          call write_file { "path": "app.py", "content": "def f(:\\n" }
          expect allow
          expect block gate python
          expect warn loop repeat
          expect hint contains "line 9"
          expect hint matches /column \\d+/
        }
        """)
    assert failures(result) == [
        (14, "allow", "block gate python"),
        (16, "warn loop repeat", "block gate python"),
        (17, 'a hint containing "line 9"', "block gate python with a different hint"),
        (18, "a hint matching /column \\d+/", "block gate python with a different hint"),
    ]
    assert {f.hint for f in result.failures} == {"blocked app.py at line 1"}


def test_the_rule_is_checked_as_well_as_the_action(tmp_path: Path) -> None:
    path = tmp_path / "two.policy"
    path.write_text(dedent("""
        tool write_file { writes path=path content=content }
        gate python { files "*.py"; check python }
        gate json { files "*.json"; check json }
        test "rule" {
          call write_file { "path": "app.py", "content": "def f(:\\n" }
          expect block gate json
        }
        """), encoding="utf-8")
    (result,) = run_tests(load_policy(path))
    assert failures(result) == [(7, "block gate json", "block gate python")]


def test_a_call_without_a_result_gets_an_empty_ok_before_the_next_call(tmp_path: Path) -> None:
    result = run_one(tmp_path, """
        test "implicit results" {
          call bash { "command": "ls" }
          call bash { "command": "pwd" }
          result ok "/workspace"
          call bash { "command": "whoami" }
          expect allow
        }
        """)
    assert [r.result for r in result.calls] == [ToolResult(""), ToolResult("/workspace"), None]


def test_a_result_after_a_turn_belongs_to_its_last_call(tmp_path: Path) -> None:
    result = run_one(tmp_path, """
        test "turn" {
          turn {
            call bash { "command": "ls" }
            call bash { "command": "python app.py" }
          }
          result error "No module named 'yaml'"
          expect hint signature MODULE_NOT_FOUND
        }
        """)
    assert result.passed
    assert [(r.call.id, r.result) for r in result.calls] == [
        ("c1", ToolResult("")), ("c2", ToolResult("No module named 'yaml'", "error"))]


def test_a_loop_warning_is_seen_before_the_call_s_result(tmp_path: Path) -> None:
    result = run_one(tmp_path, """
        test "warning at the turn" {
          repeat 3 { call bash { "command": "submit" } }
          expect warn loop repeat
          expect hint contains "repeated 3 times"
          result ok "Wrong flag!"
          expect warn loop repeat
        }
        """)
    assert result.passed, failures(result)


def test_an_allowed_write_changes_the_files_and_a_blocked_one_does_not(tmp_path: Path) -> None:
    result = run_one(tmp_path, """
        test "virtual files" {
          file "app.py" "x = 1\\n"
          call str_replace { "path": "app.py", "old_str": "x = 1", "new_str": "x = 1)" }
          expect block gate python
          call str_replace { "path": "app.py", "old_str": "x = 1", "new_str": "x = [1]" }
          expect allow
          call write_file { "path": "app.py", "content": "y = (\\n", "append": true }
          expect allow
          call str_replace { "path": "app.py", "old_str": "x = [1]", "new_str": "x = [1]]" }
          expect block gate python
          expect hint contains "line 1"
        }
        """)
    assert result.passed, failures(result)


def test_expectations_after_a_stop_report_that_nothing_ran(tmp_path: Path) -> None:
    result = run_one(tmp_path, """
        test "after the stop" {
          repeat 5 { call bash { "command": "submit" } }
          expect stop loop repeat
          call bash { "command": "ls" }
          expect allow
        }
        """)
    assert failures(result) == [(16, "allow", "nothing: the run had already been stopped")]


def test_a_result_or_expect_without_a_call_fails_instead_of_crashing() -> None:
    policy = load_policy("builtin:default")
    steps = (compiled.TestStep("result", content="x"), compiled.TestStep("expect", action="allow"))
    result = run_test(policy, compiled.PolicyTest("hand-built", steps))
    assert failures(result) == [(None, "a call before this result", "no call yet"),
                                (None, "a call before this expect", "no call yet")]


def test_a_second_result_for_the_same_call_fails() -> None:
    policy = load_policy("builtin:default")
    call = compiled.TestCall("bash", {"command": "ls"})
    steps = (compiled.TestStep("turn", calls=(call,)), compiled.TestStep("result", content="a"),
             compiled.TestStep("result", content="b"))
    result = run_test(policy, compiled.PolicyTest("twice", steps))
    assert failures(result) == [(None, "one result for call c1", "it already has a result")]


def test_each_test_runs_in_a_fresh_session(tmp_path: Path) -> None:
    policy = load_policy(write_policy(tmp_path, """
        test "first" {
          file "app.py" "x = 1\\n"
          repeat 2 { call bash { "command": "submit" } }
          expect allow
        }
        test "second" {
          call str_replace { "path": "app.py", "old_str": "x = 1", "new_str": "x = (" }
          expect allow
          repeat 2 { call bash { "command": "submit" } }
          expect allow
        }
        """))
    assert [r.passed for r in run_tests(policy)] == [True, True]


# --- every shipped policy tests each of its rules ------------------------------------------------


def _declared_rules(path: Path) -> set[str]:
    """``kind name`` of the gates, signatures and loops a policy file itself declares."""
    tree, diagnostics = parse_bytes(path.read_bytes(), str(path))
    assert tree is not None, diagnostics
    rules = set()
    for statement in tree.statements:
        if statement.name in ("gate", "signature", "loop") and statement.values:
            name = statement.values[0]
            assert isinstance(name, (ast.Name, ast.String))
            rules.add(f"{statement.name} {name.value}")
    return rules


@pytest.mark.parametrize("name", builtin_policy_names())
def test_every_rule_of_a_shipped_policy_has_a_test(name: str) -> None:
    policy = load_policy(f"builtin:{name}")
    tested = {step.rule for test in policy.tests for step in test.steps if step.rule}
    missing = _declared_rules(builtin_policy_path(name)) - tested
    assert not missing, f"builtin:{name} has no test with `expect … {sorted(missing)[0]}`"


# --- policyctl test -----------------------------------------------------------------------------------


def policyctl(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``policyctl test ARGS`` as a subprocess, the way CI runs it."""
    return subprocess.run([sys.executable, "-m", "cli", "test", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(REPO), "NO_COLOR": "1", "PATH": ""})


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """``policyctl test ARGS`` in this process (faster; the subprocess tests cover the real entry point)."""

    def run(*args: str, cwd: Path) -> Run:
        monkeypatch.chdir(cwd)
        result = CliRunner().invoke(main.policyctl, ["test", *args])
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return Run(result.exit_code, result.stdout, result.stderr)

    return run


PASSING = """
test "a broken write is blocked" {
  call write_file { "path": "app.py", "content": "def f(:\\n" }
  expect block gate python
}
"""

FAILING = """
test "a missing module is diagnosed" {
  call bash { "command": "python app.py" }
  result error "No module named 'yaml'"
  expect hint contains "install yaml"
}
"""


def test_every_shipped_policy_passes_its_tests() -> None:
    run = policyctl("builtin:")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert all(line.startswith("PASS ") for line in lines[:-1])
    assert lines[-1] == f"{len(lines) - 1} passed, 0 failed"
    assert run.stderr == ""


def test_text_output_one_line_per_test_and_failures_in_detail(tmp_path: Path) -> None:
    write_policy(tmp_path, PASSING + FAILING)
    run = policyctl("team.policy", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stdout == dedent("""\
        PASS a broken write is blocked (team.policy:12)
        FAIL a missing module is diagnosed (team.policy:17)
            team.policy:20: expect hint contains "install yaml"
              expected: a hint containing "install yaml"
              actual:   hint signature MODULE_NOT_FOUND with a different hint
              hint:
                | install PyYAML
        1 passed, 1 failed
        """)


def test_folders_are_searched_and_k_selects_by_name(tmp_path: Path, invoke: Callable[..., Run]) -> None:
    (tmp_path / "policies").mkdir()
    write_policy(tmp_path / "policies", PASSING + FAILING)
    (tmp_path / ".hidden").mkdir()
    write_policy(tmp_path / ".hidden", FAILING)
    everything = invoke(".", cwd=tmp_path)
    assert everything.stdout.splitlines()[-1] == "1 passed, 1 failed"
    selected = invoke("-k", "BROKEN", cwd=tmp_path)
    assert selected.returncode == 0
    assert selected.stdout == "PASS a broken write is blocked (policies/team.policy:12)\n1 passed, 0 failed\n"


def test_json_output(tmp_path: Path, invoke: Callable[..., Run]) -> None:
    write_policy(tmp_path, PASSING + FAILING)
    run = invoke("--format", "json", "team.policy", cwd=tmp_path)
    assert run.returncode == 1
    document = json.loads(run.stdout)
    assert document["summary"] == {"passed": 1, "failed": 1}
    first, second = document["tests"]
    assert first == {"policy": "team", "name": "a broken write is blocked", "file": "team.policy", "line": 12,
                     "passed": True, "failures": []}
    assert second["failures"] == [{"line": 20, "step": 'expect hint contains "install yaml"',
                                   "expected": 'a hint containing "install yaml"',
                                   "actual": "hint signature MODULE_NOT_FOUND with a different hint",
                                   "hint": "install PyYAML"}]


def test_junit_output(tmp_path: Path, invoke: Callable[..., Run]) -> None:
    write_policy(tmp_path, PASSING + FAILING)
    run = invoke("--format", "junit", "team.policy", cwd=tmp_path)
    assert run.returncode == 1
    root = ET.fromstring(run.stdout)
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    (suite,) = root
    assert suite.get("name") == "team" and suite.get("tests") == "2" and suite.get("failures") == "1"
    passed, failed = suite
    assert passed.get("name") == "a broken write is blocked" and len(passed) == 0
    assert failed.get("file") == "team.policy" and failed.get("line") == "17"
    (failure,) = failed
    assert failure.get("message") == (
        'expect hint contains "install yaml": expected a hint containing "install yaml", '
        "got hint signature MODULE_NOT_FOUND with a different hint")
    assert "| install PyYAML" in (failure.text or "")


def test_github_output_annotates_the_failing_line(tmp_path: Path, invoke: Callable[..., Run]) -> None:
    write_policy(tmp_path, PASSING + FAILING)
    run = invoke("--format", "github", "team.policy", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stdout.splitlines() == [
        "::error title=policy test failed%3A a missing module is diagnosed,file=team.policy,line=20::"
        'expect hint contains "install yaml"%0Aexpected: a hint containing "install yaml"%0A'
        "actual: hint signature MODULE_NOT_FOUND with a different hint%0Ahint:%0Ainstall PyYAML",
        "1 passed, 1 failed",
    ]


def test_a_policy_with_errors_prints_its_diagnostics_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "bad.policy").write_text('loop repeat { wran 3 }\n', encoding="utf-8")
    write_policy(tmp_path, PASSING)
    run = policyctl("bad.policy", "team.policy", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stdout == ""
    assert "bad.policy:1:15: error[E102]" in run.stderr
    assert "did you mean `warn`?" in run.stderr
    assert run.stderr.rstrip().endswith("no test was run")


@pytest.mark.parametrize(("args", "message"), [
    (("missing.policy",), "no such file or folder"),
    (("builtin:nope",), "unknown built-in policy"),
    (("-k", "no such test", "team.policy"), "no test name contains 'no such test'"),
    (("--format", "xml", "team.policy"), "Invalid value for '--format'"),
])
def test_usage_errors_exit_2(tmp_path: Path, invoke: Callable[..., Run], args: tuple[str, ...],
                             message: str) -> None:
    write_policy(tmp_path, PASSING)
    run = invoke(*args, cwd=tmp_path)
    assert run.returncode == 2
    assert message in run.stderr


def test_a_policy_without_tests_passes_with_nothing_to_run(tmp_path: Path,
                                                          invoke: Callable[..., Run]) -> None:
    write_policy(tmp_path, "")
    run = invoke("team.policy", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (0, "0 passed, 0 failed\n")
