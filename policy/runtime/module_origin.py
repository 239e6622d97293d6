"""Where a Python module that could not be imported would come from: the project
under work, a C extension of it that was never built, or a third-party package.

Advice differs: a project module is found by fixing the import path (the working
directory, ``PYTHONPATH``, a settings variable), an extension by building it,
and only a third-party package by installing it.  The answer comes from the
module's name (test and settings modules), the failed output (the frames of its
traceback that are not installed code), the command, and a few files looked up
through the guard's reader next to the working directory and the traceback's
own files.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from typing import Literal

ModuleOrigin = Literal["project", "extension", "third_party"]
ReadFile = Callable[[str], "str | None"]

_FRAME_FILE = re.compile(r'File "([^"\n]+)", line \d+')
"""A traceback frame's file, as CPython writes it (a literal start: a fast search)."""
_PYTEST_FRAME_FILE = re.compile(r"(?m)^([\w./-]+\.py):\d+: in ")
"""…and as pytest writes it (looked for only when the output has a ``.py:`` in it)."""
_INSTALLED = re.compile(r"/(?:site|dist)-packages/|/lib/python\d[\d.]*/|^<|/\.venv/|/venv/|/node_modules/")
"""Files of installed code, the standard library, or no file at all."""
_PROJECT_NAMES = re.compile(
    r"^(?:tests?|testing|conftest|manage|settings|src|test_\w*|\w*_tests?|\w*settings\w*|\w*_test_\w*)$"
)
"""Top-level names only a project has: its tests and its settings."""
_COMMAND_WORD = re.compile(r"[^\s'\"=]+")
"""A word of a command, split at quotes and ``=`` too (``PYTHONPATH=src/lib``)."""
_SETTINGS_OPTION = re.compile(
    r"SETTINGS_MODULE=['\"]?(?P<module>[\w.]+)|--settings[= ]['\"]?(?P<option>[\w.]+)"
)
"""A settings module the command names (Django's variable, a test runner's option)."""
_EXTENSION_SOURCES = (".c", ".pyx", ".cpp")
MAX_FOLDERS = 6
"""Most traceback folders looked in (each look is a read through the guard's reader)."""
PARENT_LEVELS = 3
"""How far above a traceback file's folder a project package is looked for."""


def module_origin(module: str, output: str, command: str, read_file: ReadFile | None) -> ModuleOrigin:
    """Where ``module`` (a dotted import name) comes from; see the module docstring."""
    parts = module.split(".")
    top = parts[0]
    folders = list(_project_folders(output))
    if read_file is not None and len(parts) > 1:
        relative = "/".join(parts)
        for folder in ["", *folders]:
            if any(_exists(read_file, _join(folder, relative + suffix)) for suffix in _EXTENSION_SOURCES):
                return "extension"
    if _PROJECT_NAMES.match(top) or any(_is_package_on_path(top, folder, read_file) for folder in folders):
        return "project"
    if _named_by_command(top, command):
        return "project"
    if read_file is not None:
        for folder in ["", "src", *folders]:
            candidates = (_join(folder, f"{top}.py"), _join(folder, f"{top}/__init__.py"))
            if any(_exists(read_file, path) for path in candidates):
                return "project"
    return "third_party"


def _named_by_command(top: str, command: str) -> bool:
    """Does the command name ``top`` as a folder of a path, a ``top.py`` file, or the
    settings module (``DJANGO_SETTINGS_MODULE=top.settings``, ``--settings top``)?"""
    if top not in command:
        return False
    for word in _COMMAND_WORD.findall(command):
        parts = word.split("/")
        if top in parts[:-1] or parts[-1] == f"{top}.py":
            return True
    for found in _SETTINGS_OPTION.finditer(command):
        if (found.group("module") or found.group("option")).split(".")[0] == top:
            return True
    return False


def _project_folders(output: str) -> Iterator[str]:
    """The folders of the traceback's files that are not installed code, each with
    up to ``PARENT_LEVELS`` of its parents, nearest first, without repeats."""
    seen: set[str] = set()
    output = output[max(output.rfind("Traceback (most recent call last):"), 0) :]  # the final one
    paths = _FRAME_FILE.findall(output)
    if ".py:" in output:
        paths += _PYTEST_FRAME_FILE.findall(output)
    for path in paths:
        if len(seen) >= MAX_FOLDERS:
            return
        if _INSTALLED.search(path):
            continue
        folder = posixpath.dirname(path)
        for _ in range(PARENT_LEVELS + 1):
            if folder in seen or folder in ("", "/") or len(seen) >= MAX_FOLDERS:
                break
            seen.add(folder)
            yield folder
            folder = posixpath.dirname(folder)


def _is_package_on_path(top: str, folder: str, read_file: ReadFile | None) -> bool:
    """Is ``top`` a folder of ``folder``'s path that is a package (Django's own ``django/``
    in Django's checkout)?  Without a reader, a folder of that name is enough."""
    parts = folder.split("/")
    if top not in parts:
        return False
    package = "/".join(parts[: parts.index(top) + 1])
    return read_file is None or _exists(read_file, f"{package}/__init__.py")


def _join(folder: str, relative: str) -> str:
    return posixpath.join(folder, relative) if folder else relative


def _exists(read_file: ReadFile, path: str) -> bool:
    try:
        return read_file(path) is not None
    except Exception:  # a reader that fails on one path says nothing about the module
        return False
