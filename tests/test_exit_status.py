"""Exit statuses: how harnesses report them, and which ones a command returns by design."""

from __future__ import annotations

import pytest

from policy.runtime.exit_status import ReportedStatus, by_design, last_program, reported_status


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Exit code 2\nmake: *** No rule to make target 'x'.  Stop.", ReportedStatus(2)),  # Claude Code
        ("Traceback …\nKeyError: 'x'\n\nExit Code: 1", ReportedStatus(1)),  # DeerFlow's bash tool
        ("npm ERR! code E404\n[The command completed with exit code 1.]", ReportedStatus(1)),  # OpenHands
        ("go: downloading …\nexit status 1", ReportedStatus(1)),  # Go's os/exec
        ("Command 'grep -q x f' returned non-zero exit status 1.", ReportedStatus(1, "grep -q x f")),
        ("Exit code: 0", ReportedStatus(0)),
        ("Exit code 2\n" + "line\n" * 10_000 + "Exit Code: 1", ReportedStatus(1)),  # the last report wins
        ("The process reported that exit codes above 1 mean failure", None),  # not a line of its own
        ("all good", None),
    ],
)
def test_reported_status(text: str, expected: ReportedStatus | None) -> None:
    assert reported_status(text) == expected


def test_a_status_in_the_middle_of_a_long_output_is_not_the_harness_s() -> None:
    assert reported_status("x\n" * 1000 + "Exit code 3\n" + "y\n" * 1000) is None


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("grep -rn TODO src", "grep"),
        ("cd src && grep -E 'a|b' app.py 2>/dev/null", "grep"),
        ("find . -name '*.py' | xargs grep -l TODO", "xargs"),
        ("timeout 10 env LC_ALL=C rg TODO", "rg"),
        ("FOO=1 /usr/bin/diff a b", "diff"),
        ("python -m flake8 src", "flake8"),
        ("uv run mypy src", "mypy"),
        ("git grep -n TODO", "git grep"),
        ("git diff --exit-code", "git diff"),
        ("(cd src && cmp a b)", "cmp"),
        ("[ -f setup.py ]", "["),
        ("./test --verbose", "./test"),  # a program named test, not the builtin
        ("grep TODO src | wc -l", "wc"),
        ("pip install x\npytest -q", "pytest"),
        ("echo 'unclosed", None),
        ("! grep TODO src", None),
    ],
)
def test_last_program(command: str, program: str | None) -> None:
    assert last_program(command) == program


@pytest.mark.parametrize(
    ("command", "code", "output", "expected"),
    [
        ("grep -rn TODO src", 1, "", True),
        ("grep -rn TODO src", None, "", True),
        ("grep -c TODO app.py", 1, "0\n", True),
        ("grep -rn TODO missing", 2, "grep: missing: No such file or directory", False),
        ("grep -rn TODO missing", None, "grep: missing: No such file or directory", False),
        ("grep -rn TODO src", None, "", True),
        ("strings x.img | grep flag", None, "strings: 'x.img': No such file", True),
        ("diff a.txt b.txt", 1, "1c1\n< a\n---\n> b\n", True),
        ("diff a.txt missing.txt", 2, "diff: missing.txt: No such file or directory", False),
        ("cmp a b", 1, "a b differ: char 1, line 1", True),
        ("test -f setup.py", 1, "", True),
        ("[ -f x", 2, "bash: line 1: [: missing `]'", False),
        ("ls | xargs grep -l TODO", 123, "", True),
        ("ls | xargs grep -l TODO", 123, "grep: a: No such file or directory", False),
        ("ruff check .", 1, "app.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.", True),
        ("ruff check .", 2, "error: Failed to parse pyproject.toml", False),
        ("mypy src", 1, "src/a.py:3: error: Incompatible types in assignment\nFound 1 error in 1 file", True),
        ("mypy src", 2, "mypy: can't read file 'src': No such file or directory", False),
        ("pylint app", 20, "app.py:1:0: C0114: Missing module docstring", True),
        ("pylint app", 1, "app.py:1:0: F0001: No module named app", False),
        ("flake8 .", 1, "Traceback (most recent call last):\n  File …\nImportError: x", False),
        ("python app.py", 1, "", False),
        ("grep -q x f", 1, "", True),
    ],
)
def test_by_design(command: str, code: int | None, output: str, expected: bool) -> None:
    assert by_design(command, code, output) is expected


def test_an_error_a_signature_names_fails_a_quiet_program_only() -> None:
    missing = "strings: 'x.img': No such file"
    assert by_design("strings x.img | grep flag", None, missing, named_error=True) is False
    assert by_design("diff old.py new.py", 1, "< raise ImportError('x')\n> pass", named_error=True) is True
