"""The validators a gate can name: the built-in ones, or a command.

Each built-in takes the text a write would leave and ``partial`` (the gate's
``partial allow``): when true, an incomplete prefix is ``incomplete`` rather
than ``invalid``.  The valid path is one parse and nothing else.  Besides
``BUILTIN_CHECKS``, every language of ``grammars.GRAMMARS`` is a built-in.
"""

from __future__ import annotations

from collections.abc import Callable

from policy.model.compiled import Validator
from policy.runtime.gates.command import run_checker
from policy.runtime.gates.data_syntax import check_json, check_toml, check_yaml
from policy.runtime.gates.grammars import GRAMMARS
from policy.runtime.gates.problems import Verdict, unavailable
from policy.runtime.gates.python_syntax import check_python
from policy.runtime.gates.syntax_tree import check_syntax_tree

BUILTIN_CHECKS: dict[str, Callable[[str, bool], Verdict]] = {
    "python": check_python,
    "json": check_json,
    "toml": check_toml,
    "yaml": check_yaml,
}


def validate(
    validator: Validator, text: str, path: str, *, partial: bool, before: str | None = None
) -> Verdict:
    """Check ``text``, the content ``path`` would have after a write (``before``: its text now).

    The tree-sitter languages (``GRAMMARS``) compare with ``before``: an error
    the file already had is not the write's doing.
    """
    if validator.kind == "command":
        return run_checker(validator, text, path, partial=partial)
    if validator.kind in GRAMMARS:
        return check_syntax_tree(validator.kind, text, partial, before)
    check = BUILTIN_CHECKS.get(validator.kind)
    if check is None:
        return unavailable(f"no built-in validator named {validator.kind!r}")
    return check(text, partial)
