"""The validators a gate can name: a built-in one (``policy.model.validators``) or a command.

The valid path is one parse and nothing else.  Besides ``BUILTIN_VALIDATORS``,
every language of ``grammars.GRAMMARS`` is a built-in; those compare with the
file's text before the write.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache

from policy.model.compiled import Validator
from policy.model.validators import BUILTIN_VALIDATORS
from policy.runtime.gates.grammars import GRAMMARS
from policy.runtime.gates.problems import Verdict, unavailable
from policy.runtime.gates.syntax_tree import check_syntax_tree

Check = Callable[[str, bool], Verdict]
"""A built-in validator: (text, partial) → verdict."""


@cache
def builtin_check(name: str) -> Check | None:
    """The check registered under ``name``, imported on first use; None for an unknown name."""
    target = BUILTIN_VALIDATORS.get(name)
    if target is None:
        return None
    module, function = target.split(":")
    check: Check = getattr(importlib.import_module(module), function)
    return check


def validate(
    validator: Validator, text: str, path: str, *, partial: bool, before: str | None = None
) -> Verdict:
    """Check ``text``, the content ``path`` would have after a write (``before``: its text now).

    The tree-sitter languages (``GRAMMARS``) compare with ``before``: an error
    the file already had is not the write's doing.
    """
    if validator.kind == "command":
        from policy.runtime.gates.command import run_checker  # subprocess, tempfile: only for a checker

        return run_checker(validator, text, path, partial=partial)
    if validator.kind in GRAMMARS:
        return check_syntax_tree(validator.kind, text, partial, before)
    check = builtin_check(validator.kind)
    if check is None:
        return unavailable(f"no built-in validator named {validator.kind!r}")
    return check(text, partial)
