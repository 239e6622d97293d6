"""The built-in validators a gate can name (``check python``, ``check javascript``), registered once.

Each entry names the function that checks a text, as ``module:function``
(``module:function:argument`` passes the argument first: the tree-sitter
languages share one check); it is imported when a gate first uses it, so
reading a policy (``policyctl lint``) does not pay for the checkers.  The
schema offers exactly these names (``policy.language.schema``), the gates call
exactly these functions (``policy.runtime.gates.validators``).  A check takes
the text a write would leave, ``partial`` (the gate's ``partial allow``: an
incomplete prefix is then ``incomplete`` rather than ``invalid``) and the
file's text before the write (None: a new file; the tree-sitter languages
use it to tell an error the write made from one the file already had) and
returns a ``Verdict``.
"""

from __future__ import annotations

SYNTAX_TREE_LANGUAGES = (
    "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "ruby", "php", "shell", "html",
    "css",
)
"""The languages checked with a tree-sitter grammar (``policy.runtime.gates.grammars``)."""

BUILTIN_VALIDATORS: dict[str, str] = {
    "python": "policy.runtime.gates.python_syntax:check_python",
    "json": "policy.runtime.gates.data_syntax:check_json",
    "toml": "policy.runtime.gates.data_syntax:check_toml",
    "yaml": "policy.runtime.gates.data_syntax:check_yaml",
    **{language: f"policy.runtime.gates.syntax_tree:check_syntax_tree:{language}"
       for language in SYNTAX_TREE_LANGUAGES},
}
"""Validator name → ``module:function`` (or ``module:function:argument``) of its check."""
