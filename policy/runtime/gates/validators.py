"""The validators a gate can name: a built-in one (``policy.model.validators``) or a command.

The valid path is one parse and nothing else.  A built-in check whose gate
names a ``confirm`` command (the language's own checker) defers to it when
it finds an error: the command's verdict (and its message) stands, unless it
cannot run.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from functools import cache

from policy.model.compiled import Validator
from policy.model.validators import BUILTIN_VALIDATORS
from policy.runtime.gates.problems import Verdict, unavailable

Check = Callable[[str, bool, str | None], Verdict]
"""A built-in validator: (text, partial, the file's text before the write) → verdict."""


@cache
def builtin_check(name: str) -> Check | None:
    """The check registered under ``name``, imported on first use; None for an unknown name."""
    target = BUILTIN_VALIDATORS.get(name)
    if target is None:
        return None
    module, function, *argument = target.split(":")
    found: Callable[..., Verdict] = getattr(importlib.import_module(module), function)
    check: Check = functools.partial(found, *argument) if argument else found
    return check


def validate(
    validator: Validator, text: str, path: str, *, partial: bool, before: str | None = None
) -> Verdict:
    """Check ``text``, the content ``path`` would have after a write (``before``: its text now)."""
    if validator.kind == "command":
        return _run_checker(validator, text, path, partial)
    check = builtin_check(validator.kind)
    if check is None:
        return unavailable(f"no built-in validator named {validator.kind!r}")
    verdict = check(text, partial, before)
    if verdict.status == "invalid" and validator.confirm is not None:
        confirmed = _run_checker(validator.confirm, text, path, partial)
        if confirmed.status != "unavailable":
            return confirmed
    return verdict


def _run_checker(validator: Validator, text: str, path: str, partial: bool) -> Verdict:
    from policy.runtime.gates.command import run_checker  # subprocess, tempfile: only for a checker

    return run_checker(validator, text, path, partial=partial)
