"""Command checkers, run for real: ``bash -n``, a program that does not exist, one that hangs."""

from __future__ import annotations

import shutil
import sys
import time

import pytest

from policy.model.compiled import CompiledPolicy, GateRule, ToolSpec, Validator
from policy.model.decision import RuleRef
from policy.model.events import ToolCall
from policy.runtime.gates import check_write
from policy.runtime.gates.command import run_checker

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")

BASH = Validator("command", "bash -n {file}")
BROKEN_SCRIPT = "echo start\nif true; then\n  echo yes\nfi\nfi\necho end\n"


@needs_bash
def test_valid_shell_passes_bash_n() -> None:
    assert run_checker(BASH, "if true; then\n  echo yes\nfi\n", "run.sh", partial=False).status == "valid"


@needs_bash
def test_bash_n_errors_block_with_the_line_and_the_output_naming_the_real_path() -> None:
    verdict = run_checker(BASH, BROKEN_SCRIPT, "scripts/run.sh", partial=True)
    assert verdict.status == "invalid" and verdict.problem is not None
    assert verdict.problem.line == 5
    assert verdict.problem.column is None
    assert verdict.problem.message.startswith("scripts/run.sh: line 5: syntax error near unexpected token")
    assert "policyctl-gate-" not in verdict.problem.output


@needs_bash
@pytest.mark.parametrize("text", ["if true; then\n  echo yes\n", 'echo "unclosed\n', "f() {\n"])
def test_a_shell_script_cut_off_at_the_end_is_incomplete_when_partial(text: str) -> None:
    assert run_checker(BASH, text, "run.sh", partial=True).status == "incomplete"
    assert run_checker(BASH, text, "run.sh", partial=False).status == "invalid"


def test_the_file_keeps_its_name_and_line_endings() -> None:
    script = "import sys, pathlib; p = pathlib.Path(sys.argv[1]); " \
             "sys.exit(0 if p.name == 'app.cfg' and p.read_bytes() == b'a\\r\\nb' else 3)"
    checker = Validator("command", f'{sys.executable} -c "{script}" {{file}}')
    assert run_checker(checker, "a\r\nb", "conf/app.cfg", partial=False).status == "valid"


def test_a_checker_that_cannot_be_found_gives_no_answer() -> None:
    missing = Validator("command", "no-such-checker-xyz --check {file}")
    verdict = run_checker(missing, "x", "a.sh", partial=False)
    assert verdict.status == "unavailable"
    assert "no-such-checker-xyz" in verdict.reason


def test_a_checker_that_hangs_is_killed_at_its_timeout() -> None:
    hanging = Validator("command", f"{sys.executable} -c 'import time; time.sleep(30)' {{file}}", timeout=0.5)
    started = time.monotonic()
    verdict = run_checker(hanging, "x", "a.sh", partial=False)
    assert verdict.status == "unavailable"
    assert "did not finish within 0.5 s" in verdict.reason
    assert time.monotonic() - started < 10


def test_a_command_that_cannot_be_split_gives_no_answer() -> None:
    verdict = run_checker(Validator("command", "bash -n '{file}"), "x", "a.sh", partial=False)
    assert verdict.status == "unavailable" and "cannot be split" in verdict.reason


def test_a_failing_checker_without_output_still_blocks_with_its_status() -> None:
    verdict = run_checker(Validator("command", f"{sys.executable} -c 'raise SystemExit(4)' {{file}}"), "x",
                          "a.txt", partial=False)
    assert verdict.status == "invalid" and verdict.problem is not None
    assert verdict.problem.message.endswith("exited with status 4")
    assert verdict.problem.line is None


def _shell_policy(command: str, timeout: float = 10.0) -> CompiledPolicy:
    gate = GateRule(RuleRef("gate", "shell"), ("*.sh",), Validator("command", command, timeout), partial=True)
    tool = ToolSpec("write_file", "write", {"path": "path", "content": "content"})
    return CompiledPolicy(name="shell", tools={"write_file": tool}, gates=(gate,))


@needs_bash
def test_a_blocked_shell_write_is_named_after_the_gate() -> None:
    call = ToolCall(id="s1", name="write_file", args={"path": "run.sh", "content": BROKEN_SCRIPT})
    decision = check_write(_shell_policy("bash -n {file}"), call, lambda path: None)
    assert decision.action == "block"
    assert decision.metadata["validator"] == "shell"
    assert decision.metadata["snippet"] == "4 | fi\n5 | fi"
    assert decision.hint is not None and "line 5" in decision.hint


def test_a_write_whose_checker_cannot_run_goes_through_and_says_so() -> None:
    call = ToolCall(id="s1", name="write_file", args={"path": "run.sh", "content": "fi\n"})
    decision = check_write(_shell_policy("no-such-checker-xyz {file}"), call, lambda path: None)
    assert decision.action == "allow"
    assert decision.metadata["checker"] == "unavailable"
    assert decision.metadata["gate"] == "shell"


@pytest.mark.parametrize(("path", "name"), [("src/app.sh", "app.sh"), ("odd name.sh", "checked.sh"),
                                            ("..", "checked"), ("a\0b.sh", "checked.sh")])
def test_the_temporary_file_is_named_like_the_real_one_when_that_is_safe(path: str, name: str) -> None:
    script = "import sys, pathlib; print(pathlib.Path(sys.argv[1]).name); sys.exit(1)"
    checker = Validator("command", f'{sys.executable} -c "{script}" {{file}}')
    verdict = run_checker(checker, "x", path, partial=False)
    assert verdict.problem is not None
    assert verdict.problem.output.splitlines()[0] == name
