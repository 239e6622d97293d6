"""External checkers: ``check command "bash -n {file}"`` run on a temporary copy of the text.

The command is split like a shell would (no shell runs it); ``{file}`` becomes
the temporary file, named like the real one so the checker picks the right
mode and its messages read naturally.  A non-zero exit is an error; a checker
that cannot run (missing program, timeout) gives no answer, and the gate
lets the write through.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shlex
import signal
import subprocess
import tempfile

from policy.model.compiled import Validator
from policy.model.hint_template import truncate_middle
from policy.runtime.gates.problems import INCOMPLETE, VALID, Problem, Verdict, invalid, unavailable

FILE_PLACEHOLDER = "{file}"
OUTPUT_LIMIT = 4000
_REAP_TIMEOUT = 5.0
_END_OF_INPUT = re.compile(r"unexpected (?:end of (?:file|input)|EOF)|end of input", re.IGNORECASE)
_PLAIN_NAME = re.compile(r"[\w.+-]{1,100}")
_GENERIC_LOCATION = re.compile(r"\bline (\d+)(?:, column (\d+))?")


def run_checker(validator: Validator, text: str, path: str, *, partial: bool) -> Verdict:
    """Run the gate's command on ``text``.

    With ``partial``, an error the checker places past the last line, or
    reports as an unexpected end of input, is taken for a cut-off text.
    """
    try:
        template = shlex.split(validator.command or "")
    except ValueError as error:
        return unavailable(f"the checker command cannot be split into arguments: {error}")
    if not template:
        return unavailable("the checker command is empty")
    display = path.replace("\\", "/")
    with tempfile.TemporaryDirectory(prefix="policyctl-gate-") as folder:
        file = os.path.join(folder, _temp_name(display))
        try:
            with open(file, "w", encoding="utf-8", errors="surrogateescape", newline="") as handle:
                handle.write(text)
        except OSError as error:
            return unavailable(f"the text could not be written for the checker: {error}")
        argv = [part.replace(FILE_PLACEHOLDER, file) for part in template]
        if not any(FILE_PLACEHOLDER in part for part in template):
            argv.append(file)
        outcome = _run(argv, validator.timeout, folder)
    if isinstance(outcome, str):
        return unavailable(outcome)
    status, raw_output = outcome
    if status == 0:
        return VALID
    output = truncate_middle(raw_output.replace(file, display).replace(folder, "").strip(), OUTPUT_LIMIT)
    line, column = _location(output, display)
    if partial and (_END_OF_INPUT.search(output) or (line is not None and line > _line_count(text))):
        return INCOMPLETE
    message = _message(output) or f"{argv[0]} exited with status {status}"
    return invalid(Problem(message, line, column, output))


def _temp_name(path: str) -> str:
    """The real file's name when it is a plain one, else ``checked`` with its extension."""
    name = posixpath.basename(path)
    if _PLAIN_NAME.fullmatch(name) and name.strip("."):
        return name
    suffix = posixpath.splitext(name)[1]
    return "checked" + (suffix if _PLAIN_NAME.fullmatch(suffix) else "")


def _run(argv: list[str], timeout: float, folder: str) -> tuple[int, str] | str:
    """The exit status and combined output, or why the command could not run."""
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=folder,
            start_new_session=True,
        )
    except OSError as error:
        return f"the checker {argv[0]!r} cannot run: {error.strerror or error}"
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        with contextlib.suppress(subprocess.TimeoutExpired):  # a descendant escaped and holds the pipe
            process.communicate(timeout=_REAP_TIMEOUT)
        return f"the checker {argv[0]!r} did not finish within {timeout:g} s"
    return process.returncode, output.decode("utf-8", "replace")


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the checker and anything it started (it runs in its own session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (AttributeError, OSError):  # no process groups here, or already gone
        process.kill()


def _location(output: str, path: str) -> tuple[int | None, int | None]:
    """The first ``path:LINE[:COL]``, ``path: line LINE`` or ``line LINE[, column COL]`` in the output."""
    named = re.search(rf"{re.escape(path)}(?::(\d+)(?::(\d+))?|: line (\d+))", output)
    if named and (named.group(1) or named.group(3)):
        column = named.group(2)
        return int(named.group(1) or named.group(3)), int(column) if column else None
    generic = _GENERIC_LOCATION.search(output)
    if generic:
        return int(generic.group(1)), int(generic.group(2)) if generic.group(2) else None
    return None, None


def _message(output: str) -> str:
    """The first output line that names an error, else the first non-blank one."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)
