"""Exit statuses: the one place that reads what a harness says a command exited with,
and knows which statuses a command returns by design.

Harnesses report a command's status in its output, each in its own words
(``Exit code 2``, ``Exit Code: 1``, ``exit status 1``, ``[The command
completed with exit code 1.]``, ``Command '…' returned non-zero exit status
1.``), on the first or last lines.  Some commands return a non-zero status that
is an answer, not a crash: ``grep`` found nothing (1), ``diff`` and ``cmp`` saw
a difference (1), ``test`` was false (1), ``xargs`` ran a command that said no
(123), a linter reported findings.  Such a result is not a failure unless its
output shows an error.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

EDGE_CHARS = 400
"""Characters at each end of an output where a harness reports the exit status."""

_REPORTED = re.compile(
    r"(?im)^[ \t\[]*(?:error: )?(?:exit(?:ed with)? code:?|exit status:?)[ \t]*(?P<code>-?\d+)\b"
    r"|\bcommand (?:completed|finished|exited) with exit code (?P<completed>-?\d+)"
    r"|^Command '(?P<command>[^\n]*)' returned non-zero exit status (?P<returned>-?\d+)"
)
"""The ways harnesses report an exit status; a line of its own (or OpenHands' sentence)."""

_WRAPPERS = frozenset({"sudo", "env", "command", "nice", "nohup", "time", "exec", "stdbuf", "timeout"})
"""Commands that run the rest of the line (``timeout 5 grep …``)."""
_RUNNERS = {("uv", "run"), ("poetry", "run"), ("pipx", "run"), ("pdm", "run"), ("npx",), ("pnpm", "exec")}
_SEPARATOR_CHARS = frozenset("|&;()")
"""Tokens made of these separate commands (``|``, ``&&``, ``;`` …); ``<``, ``>`` redirect."""

_SEARCH = frozenset({"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "git grep"})
_COMPARE = frozenset({"diff", "cmp", "colordiff", "git diff"})
_TEST = frozenset({"test", "[", "[["})
_LINTERS = frozenset({
    "ruff", "flake8", "pylint", "pycodestyle", "pyflakes", "pydocstyle", "mypy", "pyright", "black",
    "isort", "bandit", "eslint", "tslint", "stylelint", "prettier", "shellcheck", "hadolint", "yamllint",
    "markdownlint", "golangci-lint", "rubocop", "cppcheck",
})


_BY_DESIGN_NAMES = frozenset(name.split()[-1] for name in {*_SEARCH, *_COMPARE, *_TEST, *_LINTERS, "xargs"})
"""Those programs' names, for a quick look before a command is parsed."""
_WORD = re.compile(r"[\w\[.-]+")


@dataclass(frozen=True, slots=True)
class ReportedStatus:
    """An exit status a harness printed, and the command it names when it names one."""

    code: int
    command: str | None = None


def reported_status(text: str) -> ReportedStatus | None:
    """The exit status the output reports on its first or last lines, or None."""
    edges = text if len(text) <= 2 * EDGE_CHARS else text[:EDGE_CHARS] + "\n" + text[-EDGE_CHARS:]
    if "xit" not in edges:  # every form says "exit" or "Exit": most outputs stop here
        return None
    reports = list(_REPORTED.finditer(edges))
    if not reports:
        return None
    found = reports[-1]  # the last report wins: a harness adds its own after the command's output
    code = found.group("code") or found.group("completed") or found.group("returned")
    return ReportedStatus(int(code), found.group("command"))


def by_design(command: str, code: int | None, output: str, named_error: bool = False) -> bool:
    """Is a non-zero status (``code``, None when the harness did not say which) an answer
    the command's last program gives by design, with no error in ``output``?
    ``named_error``: a signature names an error in the output.  That is an error for a
    program that prints nothing else when it says no (``grep``, ``test``, ``xargs``
    running one), not for one whose answer is text that may quote anything (``diff``,
    a linter's findings)."""
    if not may_be_by_design(command):
        return False
    program = last_program(command)
    if program is None:
        return False
    family = _family(program)
    if named_error and family in _QUIET_FAMILIES:
        return False
    check = _RULES.get(family)
    return check is not None and check(program, code, output)


def may_be_by_design(command: str) -> bool:
    """Does the command name any program that has by-design statuses?  (A quick look: most
    commands do not, and need not be parsed.)"""
    return not _BY_DESIGN_NAMES.isdisjoint(_WORD.findall(command))


def last_program(command: str) -> str | None:
    """The program whose status is the command line's: that of its last simple command,
    past wrappers (``timeout 5``, ``env X=1``) and runners (``python -m``, ``uv run``);
    ``git grep`` and ``git diff`` keep their subcommand.  None when it cannot be read."""
    try:
        lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:  # an unclosed quote
        return None
    last: list[str] = []
    for token in tokens:
        if token and set(token) <= _SEPARATOR_CHARS:
            if token != ")":  # `(cd src && grep …)`: the group's status is its last command's
                last = []
        else:
            last.append(token)
    return _program(last)


def _program(words: list[str]) -> str | None:
    words = list(words)
    while words:
        word = words[0]
        if "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier():
            words.pop(0)  # VAR=value
        elif word in _WRAPPERS:
            words.pop(0)
            while words and (words[0].startswith("-") or words[0][:1].isdigit()):
                words.pop(0)  # timeout 5, nice -n 10, env -i
        elif tuple(words[:2]) in _RUNNERS or tuple(words[:1]) in _RUNNERS:
            del words[: 2 if tuple(words[:2]) in _RUNNERS else 1]
        elif _basename(word).startswith("python") and words[1:2] == ["-m"] and len(words) > 2:
            del words[:2]
        elif word == "!":
            return None  # a negated status: the answer is the other way round
        else:
            break
    if not words:
        return None
    name = _basename(words[0])
    if name in _TEST and name != words[0]:
        name = words[0]  # `./test` is a program of the project, not the shell's `test`
    if name == "git" and len(words) > 1 and words[1] in {"grep", "diff"}:
        return f"git {words[1]}"
    return name


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _family(program: str) -> str:
    for family, names in (("search", _SEARCH), ("compare", _COMPARE), ("test", _TEST), ("lint", _LINTERS)):
        if program in names:
            return family
    return program


def _shows_error(program: str, output: str) -> bool:
    """Does the output hold the program's own diagnostic, or a traceback?"""
    name = program.split()[0]
    prefixes = (f"{name}: ", f"{name}:", "Traceback (most recent call last):")
    shell = re.compile(rf"(?m)^(?:[\w/.-]+: )?(?:line \d+: |\d+: )?{re.escape(name)}: ")
    return any(line.startswith(prefixes) for line in output.splitlines()) or shell.search(output) is not None


def _answer(status: int) -> Callable[[str, int | None, str], bool]:
    """A program whose ``status`` is an answer and whose errors have another status."""

    def check(program: str, code: int | None, output: str) -> bool:
        return (code is None or code == status) and not _shows_error(program, output)

    return check


def _xargs(program: str, code: int | None, output: str) -> bool:
    """xargs: 123 when a command it ran said no; by design only when nothing was printed."""
    return code in (None, 123) and not _without_status_lines(output).strip()


def _lint(program: str, code: int | None, output: str) -> bool:
    """A linter: findings give 1 (pylint: a sum of 2, 4, 8, 16; black: 1 to reformat)."""
    if code is not None and code != 1 and program != "pylint":
        return False
    if code is not None and program == "pylint" and (code & _PYLINT_BROKEN or not code & _PYLINT_FINDINGS):
        return False
    return "Traceback (most recent call last):" not in output and not _shows_error(program, output)


_PYLINT_FINDINGS = 2 | 4 | 8 | 16
"""pylint's status is a sum: error, warning, refactor and convention messages…"""
_PYLINT_BROKEN = 1 | 32
"""…and a fatal message or a usage error."""


def _without_status_lines(output: str) -> str:
    return _REPORTED.sub("", output)


_QUIET_FAMILIES = frozenset({"search", "test", "xargs"})
"""Programs that print nothing but diagnostics when their answer is no."""

_RULES: dict[str, Callable[[str, int | None, str], bool]] = {
    "search": _answer(1),
    "compare": _answer(1),
    "test": _answer(1),
    "xargs": _xargs,
    "lint": _lint,
}
"""By family of program: is this status by design, given the output?"""
