"""The built-in validators a gate can name (``check python``), registered once.

Each entry names the function that checks a text, as ``module:function``; it
is imported when a gate first uses it, so reading a policy (``policyctl
lint``) does not pay for the checkers.  The schema offers exactly these names
(``policy.language.schema``), the gates call exactly these functions
(``policy.runtime.gates.validators``).  A check takes the text a write would
leave and ``partial`` (the gate's ``partial allow``: an incomplete prefix is
then ``incomplete`` rather than ``invalid``) and returns a ``Verdict``.
"""

from __future__ import annotations

BUILTIN_VALIDATORS: dict[str, str] = {
    "python": "policy.runtime.gates.python_syntax:check_python",
    "json": "policy.runtime.gates.data_syntax:check_json",
    "toml": "policy.runtime.gates.data_syntax:check_toml",
    "yaml": "policy.runtime.gates.data_syntax:check_yaml",
}
"""Validator name → ``module:function`` of its check."""
