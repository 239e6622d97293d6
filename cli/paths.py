"""Turn a command's PATHS into the policy sources it names.

A path is a file, a folder (searched recursively for ``*.policy``, skipping
hidden folders such as ``.git`` and ``.venv``), or ``builtin:NAME`` for a
shipped policy (``builtin:`` alone: every shipped policy).  A path that
names nothing usable is a usage error (exit status 2), reported before any
work is done.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import click

from policy.resources import builtin_policy_names

BUILTIN_PREFIX = "builtin:"
POLICY_SUFFIX = ".policy"


def policy_sources(paths: Iterable[str], *, allow_builtin: bool = True) -> list[str]:
    """The sources ``paths`` name, in order and without duplicates; raises :class:`click.BadParameter`."""
    sources: list[str] = []
    seen: set[str] = set()
    for path in paths:
        for source in _expand(path, allow_builtin):
            identity = source if source.startswith(BUILTIN_PREFIX) else os.path.realpath(source)
            if identity not in seen:
                seen.add(identity)
                sources.append(source)
    return sources


def _expand(path: str, allow_builtin: bool) -> list[str]:
    if path.startswith(BUILTIN_PREFIX):
        if not allow_builtin:
            raise _bad(f"{path}: shipped policies cannot be changed; name a file or folder")
        return _builtins(path.removeprefix(BUILTIN_PREFIX))
    if os.path.isdir(path):
        found = _policy_files(path)
        if not found:
            raise _bad(f"{path}: no *{POLICY_SUFFIX} files in this folder")
        return found
    if not os.path.lexists(path):
        raise _bad(f"{path}: no such file or folder")
    if not os.path.exists(path):
        raise _bad(f"{path}: broken symbolic link")
    if not os.path.isfile(path):
        raise _bad(f"{path}: not a regular file or folder")
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise _bad(f"{path}: cannot be read: {err.strerror or err}") from None
    return [path]


def _builtins(name: str) -> list[str]:
    names = builtin_policy_names()
    if not name:
        return [BUILTIN_PREFIX + n for n in names]
    if name not in names:
        raise _bad(f"unknown built-in policy `{BUILTIN_PREFIX}{name}` "
                   f"(available: {', '.join(BUILTIN_PREFIX + n for n in names)})")
    return [BUILTIN_PREFIX + name]


def _policy_files(folder: str) -> list[str]:
    def fail(err: OSError) -> None:
        raise _bad(f"{err.filename}: cannot be read: {err.strerror or err}")

    found: list[str] = []
    for root, dirs, files in os.walk(folder, onerror=fail):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(os.path.normpath(os.path.join(root, f)) for f in sorted(files)
                     if f.endswith(POLICY_SUFFIX) and not f.startswith("."))
    return found


def _bad(message: str) -> click.BadParameter:
    return click.BadParameter(message, param_hint="PATHS")
