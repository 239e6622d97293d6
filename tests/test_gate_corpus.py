"""The write gates' quality bar, on real files no one here wrote.

1. Valid files written in chunks are never blocked.  Every top-level module
   of the running Python's standard library (those that compile) and every
   JSON file of the installed packages is written through ``check_write``
   (``builtin:default``) as one overwrite followed by appends, at line
   boundaries: the whole file at once, every prefix at 100-line (JSON: 10-
   and 100-line) boundaries, and, at a position chosen from the file's name,
   a window of consecutive 1-, 4- and 16-line chunks.  ZERO chunks may be
   blocked.  Checking every line-boundary prefix of every file costs time
   quadratic in the file's length; the share actually checked is printed.
2. Real errors are blocked.  Each is injected into one line of a chunk that
   continues with the file's own valid text, and the chunk is appended to the
   valid text before it: a ``:`` deleted at the end of a block header, an
   extra ``)``, a statement indented too far or dedented to no level, and in
   JSON a stray ``,``.  At least 99 % must be blocked.

Both figures are printed (``pytest -s``) and recorded as test properties.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sysconfig
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from itertools import pairwise
from multiprocessing import get_context
from pathlib import Path
from typing import TypeVar

import pytest
from gate_sandbox import Sandbox, chunk_plans, where

from policy.language.loader import load_policy
from policy.model.compiled import CompiledPolicy

pytestmark = pytest.mark.slow

PYTHON_WINDOWS = {1: 20, 4: 10, 16: 10}
"""Chunk size → how many consecutive chunks of that size one window of a Python file holds."""
JSON_WINDOWS = {1: 200}
PYTHON_FULL_CHUNKINGS = (None, 100)
"""Chunkings applied to the whole file (None: the file in one write)."""
JSON_FULL_CHUNKINGS = (None, 10, 100)
ERROR_CHUNKS = (2, 8)
"""Sizes of the chunk an injected error sits in (never its last line)."""
SITES_PER_KIND = 2
"""Injected errors of each kind per Python file (JSON files get five times as many)."""
REQUIRED_BLOCK_RATE = 0.99
WORKERS = max(1, min(4, os.cpu_count() or 1))

Run = TypeVar("Run")
RecordProperty = Callable[[str, object], None]

_HEADER = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|if|elif|else|for|while|with|try|except|finally)\b[^#]*:\s*$"
)


# --- the corpus ---------------------------------------------------------------------------------

def stdlib_modules() -> list[Path]:
    """Top-level ``.py`` files of the running Python's standard library that compile."""
    found = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        found.append(path)
    return found


def package_json_files() -> list[Path]:
    """``.json`` files of the installed packages (site-packages) that are valid JSON."""
    roots = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    found = []
    for root in roots:
        for path in sorted(Path(root).rglob("*.json")):
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError):
                continue
            found.append(path)
    return found


@cache
def default_policy() -> CompiledPolicy:
    return load_policy("builtin:default")


# --- valid files, chunk by chunk ----------------------------------------------------------------

@dataclass
class ChunkRun:
    checks: int = 0
    prefixes: set[int] = field(default_factory=set)
    """Distinct prefix lengths (in lines) that were checked."""
    lines: int = 0
    blocked: list[str] = field(default_factory=list)
    """Valid chunks that were blocked, and complete files judged merely incomplete."""


def write_in_chunks(path: str, kind: str) -> ChunkRun:
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    target = "module.py" if kind == "python" else "data.json"
    full, windows = (PYTHON_FULL_CHUNKINGS, PYTHON_WINDOWS) if kind == "python" else (JSON_FULL_CHUNKINGS,
                                                                                        JSON_WINDOWS)
    run = ChunkRun(lines=len(lines))
    for ends in chunk_plans(len(lines), full, windows, Path(path).name):
        sandbox, written = Sandbox(default_policy()), 0
        for end in ends:
            decision = sandbox.write(target, "".join(lines[written:end]), append=written > 0)
            run.checks += 1
            run.prefixes.add(end)
            if decision.action == "block":
                run.blocked.append(f"{Path(path).name} after line {end}: {where(decision)}")
                break
            if end == len(lines) and decision.metadata.get("incomplete"):
                run.blocked.append(f"{Path(path).name}: the complete file was judged incomplete")
            written = end
    return run


# --- injected errors --------------------------------------------------------------------------

Mutation = tuple[str, int, str]
"""(kind, 0-based line, the line's new text)."""


def python_mutations(text: str, lines: list[str]) -> Iterator[Mutation]:
    for number, line in enumerate(lines):
        code = line.rstrip("\n")
        if _HEADER.match(code):
            yield "deleted colon", number, code.rstrip()[:-1] + "\n"
        if code.strip() and "#" not in code:
            yield "extra parenthesis", number, code + ")\n"
    for number, column in _statement_starts(ast.parse(text)):
        if number % 2:
            yield "unexpected indent", number, "  " + lines[number]
        elif column >= 4:
            yield "dedent to no level", number, lines[number][2:]


def _statement_starts(tree: ast.AST) -> Iterator[tuple[int, int]]:
    """(0-based line, column) of every statement that follows a sibling on a later line."""
    found = set()
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if not isinstance(body, list):
                continue
            for before, statement in pairwise(body):
                if not isinstance(statement, ast.stmt) or before.end_lineno is None:
                    continue
                decorators = getattr(statement, "decorator_list", [])
                first = min([statement.lineno, *(d.lineno for d in decorators)])
                if first > before.end_lineno:
                    found.add((first - 1, statement.col_offset))
    return iter(sorted(found))


def json_mutations(text: str, lines: list[str]) -> Iterator[Mutation]:
    for number, line in enumerate(lines[:-1]):
        code = line.rstrip()
        following = lines[number + 1].lstrip()
        if code.endswith(","):
            yield "doubled comma", number, code + ",\n"
        elif code.endswith(("{", "[")):
            yield "comma after an opening bracket", number, code + ",\n"
        elif code and following.startswith(("}", "]")):
            yield "trailing comma", number, code + ",\n"


def _python_is_broken(text: str) -> bool:
    try:
        compile(text, "mutated.py", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError:
        return True
    return False


def _json_is_broken(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


@dataclass
class InjectionRun:
    cases: int = 0
    blocked: int = 0
    at_the_line: int = 0
    """Blocked with the injected line (or the one after it) as the reported line."""
    missed: list[str] = field(default_factory=list)


def inject_errors(path: str, kind: str) -> InjectionRun:
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    mutations: Callable[[str, list[str]], Iterator[Mutation]]
    mutations, is_broken, per_kind, target = (
        (python_mutations, _python_is_broken, SITES_PER_KIND, "module.py") if kind == "python"
        else (json_mutations, _json_is_broken, SITES_PER_KIND * 5, "data.json"))
    sites: dict[str, list[tuple[int, str]]] = {}
    for name, number, new in mutations(text, lines):
        sites.setdefault(name, []).append((number, new))
    run = InjectionRun()
    for name, candidates in sorted(sites.items()):
        chosen = 0
        for number, new in candidates[:: max(1, len(candidates) // (per_kind * 4))]:
            if chosen == per_kind:
                break
            mutated = [*lines[:number], new, *lines[number + 1 :]]
            if not is_broken("".join(mutated)):
                continue  # the line was inside a string, or the change happens to be valid
            chosen += 1
            for size in ERROR_CHUNKS:
                start = number // size * size
                end = start + size
                if number >= end - 1 or end > len(lines):
                    continue
                sandbox = Sandbox(default_policy())
                sandbox.files[target] = "".join(lines[:start])
                decision = sandbox.write(target, "".join(mutated[start:end]), append=True)
                run.cases += 1
                if decision.action == "block":
                    run.blocked += 1
                    run.at_the_line += decision.metadata["line"] in (number + 1, number + 2)
                else:
                    where = f"{Path(path).name}:{number + 1}"
                    run.missed.append(f"{where} {name} in a {size}-line chunk: {new.strip()}")
    return run


# --- the tests ---------------------------------------------------------------------------------

def _map(function: Callable[[str, str], Run], paths: list[Path], kind: str) -> list[Run]:
    with ProcessPoolExecutor(WORKERS, mp_context=get_context("spawn")) as pool:
        return list(pool.map(function, [str(p) for p in paths], [kind] * len(paths)))


@pytest.fixture(scope="module")
def python_files() -> list[Path]:
    files = stdlib_modules()
    assert len(files) > 100, "the standard library was not found"
    return files


@pytest.fixture(scope="module")
def json_files() -> list[Path]:
    files = package_json_files()
    assert files, "no installed package ships a JSON file"
    return files


@pytest.mark.parametrize("kind", ["python", "json"])
def test_valid_files_written_in_chunks_are_never_blocked(
    kind: str, python_files: list[Path], json_files: list[Path], record_property: RecordProperty
) -> None:
    files = python_files if kind == "python" else json_files
    runs = _map(write_in_chunks, files, kind)
    checks = sum(run.checks for run in runs)
    checked = sum(len(run.prefixes) for run in runs)
    possible = sum(run.lines for run in runs)
    blocked = [line for run in runs for line in run.blocked]
    summary = (f"{kind}: {len(files)} files, {checks} chunk writes, {len(blocked)} blocked; "
               f"{checked} of {possible} line-boundary prefixes checked ({checked / possible:.1%})")
    print(summary)
    record_property(f"{kind}_valid_chunks", summary)
    assert not blocked, "valid text was blocked:\n" + "\n".join(blocked[:20])


@pytest.mark.parametrize("kind", ["python", "json"])
def test_injected_errors_are_blocked(
    kind: str, python_files: list[Path], json_files: list[Path], record_property: RecordProperty
) -> None:
    files = python_files if kind == "python" else json_files
    runs = _map(inject_errors, files, kind)
    cases = sum(run.cases for run in runs)
    blocked = sum(run.blocked for run in runs)
    at_the_line = sum(run.at_the_line for run in runs)
    missed = [line for run in runs for line in run.missed]
    summary = (f"{kind}: {blocked} of {cases} injected errors blocked ({blocked / cases:.2%}); "
               f"{at_the_line} reported at the injected line or the next")
    print(summary)
    record_property(f"{kind}_injected_errors", summary)
    assert cases >= (200 if kind == "python" else 50)
    assert blocked / cases >= REQUIRED_BLOCK_RATE, "missed:\n" + "\n".join(missed[:20])
