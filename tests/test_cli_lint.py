"""``policyctl lint``: the broken examples, the shipped policies, formats, exit codes, bad input."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from cli.lint import lint_sources
from cli.main import policyctl
from policy.language.codes import CODES
from policy.reporters.formats import render_lint
from policy.resources import builtin_policy_names

REPO = Path(__file__).resolve().parents[1]
BAD = REPO / "tests" / "fixtures" / "bad"
BAD_FIXTURES = sorted(BAD.glob("*.policy"))


class TextSnapshotExtension(SingleFileSnapshotExtension):
    """One plain ``.txt`` file per snapshot, so a change reads as a diff of the output."""

    file_extension = "txt"
    _write_mode = WriteMode.TEXT


@pytest.fixture
def text_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(TextSnapshotExtension)


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run from the checkout, so paths in the output are relative to it."""
    monkeypatch.chdir(REPO)
    yield


def lint(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(policyctl, ["lint", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def policyctl_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, cwd=REPO,
                          check=False, env=env)


# --- the deliberately broken examples ------------------------------------------------


@pytest.mark.parametrize("fixture", BAD_FIXTURES, ids=lambda p: p.stem)
def test_bad_example_output(fixture: Path, in_repo: None, text_snapshot: SnapshotAssertion) -> None:
    status, output = lint(str(fixture.relative_to(REPO)))
    assert status == (0 if fixture.name.startswith("w") else 1)
    assert output == text_snapshot


@pytest.mark.parametrize("fixture", BAD_FIXTURES, ids=lambda p: p.stem)
def test_bad_example_has_exactly_its_one_problem(fixture: Path) -> None:
    report = lint_sources([str(fixture)])
    assert [d.code for d in report.diagnostics] == [fixture.name.split("_", 1)[0].upper()]


UNFIXTURED = {"E605"}
"""Codes no single file can trigger (E605 needs a chain of 33 files: tests/test_language_hostile.py)."""
FIXTURED = set(CODES) - UNFIXTURED


def test_every_diagnostic_code_has_a_bad_example() -> None:
    covered = {f.name.split("_", 1)[0].upper() for f in BAD_FIXTURES}
    assert covered == FIXTURED


def test_lint_the_folder_of_bad_examples(in_repo: None) -> None:
    status, output = lint("tests/fixtures/bad")
    errors = sum(1 for code in CODES.values() if code.severity.value == "error" and code.code in FIXTURED)
    warnings = len(FIXTURED) - errors
    assert status == 1
    assert output.endswith(f"{errors} errors, {warnings} warnings in {len(BAD_FIXTURES)} files\n")


# --- the shipped policies -----------------------------------------------------------------


def test_shipped_policies_are_clean(in_repo: None) -> None:
    shipped = len(list((REPO / "policies").rglob("*.policy")))
    assert lint("--strict", "policies") == (0, f"{shipped} files checked, no problems\n")


def test_builtin_names_one_or_every_shipped_policy() -> None:
    assert lint("builtin:default") == (0, "1 file checked, no problems\n")
    names = builtin_policy_names()
    assert lint("--strict", "builtin:") == (0, f"{len(names)} files checked, no problems\n")


# --- exit status -----------------------------------------------------------------------------


def test_warnings_pass_unless_strict() -> None:
    warning_only = str(BAD / "w102_gate_never_runs.policy")
    assert lint(warning_only)[0] == 0
    assert lint("--strict", warning_only)[0] == 1


def test_without_paths_the_current_folder_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "a.policy").write_text('extends "builtin:default"\n')
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "broken.policy").write_text("gate {\n")  # hidden folders are skipped
    (tmp_path / "notes.txt").write_text("not a policy")
    monkeypatch.chdir(tmp_path)
    assert lint() == (0, "1 file checked, no problems\n")


def test_a_file_named_twice_is_checked_once(tmp_path: Path) -> None:
    path = tmp_path / "a.policy"
    path.write_text("gate {\n")
    status, output = lint(str(path), str(tmp_path), str(tmp_path / "." / "a.policy"))
    assert status == 1
    assert output.endswith("1 error in 1 file\n")


@pytest.mark.parametrize(("args", "message"), [
    (["missing.policy"], "missing.policy: no such file or folder"),
    (["cli"], "cli: no *.policy files in this folder"),
    (["builtin:nope"], "unknown built-in policy `builtin:nope` (available: builtin:"),
    (["--format", "xml", "policies"], "'xml' is not one of 'text', 'json', 'github', 'sarif'"),
])
def test_usage_errors_exit_2(args: list[str], message: str, in_repo: None) -> None:
    status, output = lint(*args)
    assert status == 2
    assert message in output.replace("\n", " ").replace("  ", " ")


def test_unreadable_path_is_a_usage_error(tmp_path: Path) -> None:
    dangling = tmp_path / "gone.policy"
    dangling.symlink_to(tmp_path / "deleted.policy")
    status, output = lint(str(dangling))
    assert status == 2
    assert "gone.policy: broken symbolic link" in output
    if os.geteuid() != 0:  # root reads everything
        locked = tmp_path / "locked.policy"
        locked.write_text("")
        locked.chmod(0)
        status, output = lint(str(locked))
        assert status == 2
        assert "locked.policy: cannot be read: Permission denied" in output


# --- formats -----------------------------------------------------------------------------


def test_json_format(in_repo: None) -> None:
    status, output = lint("--format", "json", "tests/fixtures/bad/e102_unknown_setting.policy")
    assert status == 1
    document = json.loads(output)
    (diagnostic,) = document["diagnostics"]
    assert diagnostic["file"] == "tests/fixtures/bad/e102_unknown_setting.policy"
    assert (diagnostic["line"], diagnostic["column"], diagnostic["code"]) == (2, 3, "E102")
    assert document["summary"] == {"files": 1, "errors": 1, "warnings": 0}


def test_github_format(in_repo: None) -> None:
    status, output = lint("--format", "github", "tests/fixtures/bad")
    lines = output.splitlines()
    assert status == 1
    assert len(lines) == len(FIXTURED)
    assert all(line.startswith(("::error file=tests/fixtures/bad/", "::warning file=tests/fixtures/bad/"))
               for line in lines)
    assert sum(line.startswith("::warning ") for line in lines) == 3


def test_sarif_format(in_repo: None) -> None:
    status, output = lint("--format", "sarif", "tests/fixtures/bad")
    log = json.loads(output)
    (run,) = log["runs"]
    assert status == 1
    assert sorted(r["ruleId"] for r in run["results"]) == sorted(FIXTURED)
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] for r in run["results"]} \
        == {"SRCROOT"}


# --- bad input, as a real process --------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b"gate x {\n" * depth + b"}\n" * depth


BAD_INPUT = {
    "empty": b"",
    "binary": bytes(range(256)) * 64,
    "invalid_utf8": b'policy "\xff\xfe" {}\n',
    "ten_megabytes": b"# padding\n" * 1_000_000 + b"loop repeat { warn 3 }\n",
    "deep_nesting": _nested(5_000),
    "long_line": b'normalize /a/ "' + b"x" * 100_000 + b'" ' + b"y" * 100_000 + b"\n",
    "long_name": b"z" * 100_000 + b"\n",
}


@pytest.mark.parametrize("name", BAD_INPUT)
def test_bad_input_gets_diagnostics_never_a_traceback(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.policy"
    path.write_bytes(BAD_INPUT[name])
    run = policyctl_process("lint", str(path))
    assert run.returncode in (0, 1), run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout.endswith((" in 1 file\n", "1 file checked, no problems\n"))
    assert max(len(line) for line in run.stdout.splitlines()) < 600


def _generated_policy(blocks: int) -> str:
    parts = ["tool write_file { writes path=path content=content }"]
    for i in range(blocks):
        parts += [
            f'gate g{i} {{\n  files "*.x{i}"\n  check json\n  hint h{i}\n}}',
            f"signature S{i} {{\n  match /error {i}: (?P<what>\\w+)/\n  hint s{i}\n}}",
            f'hint h{i} "line {{{{ line }}}} of {{{{ path }}}}"',
            f'hint s{i} "{{{{ what }}}} failed ({i})"',
            f'normalize /x{i}/ "y"',
            f'gate bad{i} {{\n  files "*.y{i}"\n  chek json\n  check yaml\n}}',  # E102
        ]
    return "\n\n".join(parts) + "\n"


def _operations(path: Path) -> int:
    """Python and C function calls made while linting ``path`` and rendering the report."""
    count = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        render_lint("text", lint_sources([str(path)]))
    finally:
        sys.setprofile(None)
    return count


def test_lint_work_grows_linearly_with_file_size(tmp_path: Path) -> None:
    small, large = tmp_path / "small.policy", tmp_path / "large.policy"
    small.write_text(_generated_policy(20))
    large.write_text(_generated_policy(80))
    _operations(small)  # warm caches (grammar, shipped hints) first
    assert len(lint_sources([str(large)]).diagnostics) == 80
    ratio = _operations(large) / _operations(small)
    assert ratio < 4 * 1.15, f"4x the input cost {ratio:.2f}x the work"


# --- terminal, entry points ----------------------------------------------------------------


def _on_a_terminal(*args: str, env: dict[str, str]) -> str:
    controller, terminal = pty.openpty()
    try:
        subprocess.run([sys.executable, "-m", "cli", *args], stdout=terminal, cwd=REPO, env=env, check=False)
    finally:
        os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal side is closed: everything has been read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_unless_no_color() -> None:
    fixture = "tests/fixtures/bad/e102_unknown_setting.policy"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert "\x1b[31m" in _on_a_terminal("lint", fixture, env=env)
    assert "\x1b[" not in _on_a_terminal("lint", fixture, env={**env, "NO_COLOR": "1"})
    assert "\x1b[" not in policyctl_process("lint", fixture, env=env).stdout  # a pipe


def test_python_m_cli_and_the_help_text() -> None:
    run = policyctl_process("lint", "--help")
    assert run.returncode == 0
    assert "builtin:NAME" in run.stdout and "`builtin:` alone" in run.stdout
    listing = policyctl_process("--help")
    assert all(command in listing.stdout for command in ("lint", "fmt"))
