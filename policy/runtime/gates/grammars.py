"""The tree-sitter grammars a gate can name, and what each needs to tell a cut-off text from a broken one.

Grammars ship compiled inside their own wheels (``tree-sitter-javascript`` …);
nothing is downloaded or built at run time.  A grammar's module is imported
the first time a gate of that language checks a text, so a policy that
gates only Python never imports ``tree_sitter``.
"""

from __future__ import annotations

import importlib
import re
import threading
from dataclasses import dataclass
from typing import Any

from policy.model.compiled import SYNTAX_TREE_LANGUAGES

BLOCK_COMMENT_END = "*/"
_IMPORT_TYPE = re.compile(rb"\bimport\(\s*(?:\"[^\"\n]*\"|'[^'\n]*')\s*\)")
"""``import("./types").T``: a TypeScript import type, which tree-sitter-typescript 0.23 does not know."""


@dataclass(frozen=True)
class Grammar:
    """One language: where its compiled grammar lives and how its open constructs close."""

    name: str
    module: str
    """The wheel's module (``tree_sitter_javascript``)."""
    function: str
    """The module's function returning the language pointer."""
    tails: tuple[str, ...] = ()
    """Text that may close a string or comment the text ends inside, tried in order."""
    keywords: frozenset[str] = frozenset()
    """Tokens that open a block closed by ``keyword_closer`` (Ruby's ``def`` … ``end``)."""
    keyword_closer: str = "end"
    modifier_parents: frozenset[str] = frozenset()
    """Node types under which a keyword does not open a block (``x = 1 if y``)."""
    try_closer: str = ""
    """What a ``try`` block still waiting for its handler is closed with (`` finally {}``)."""
    heredoc: re.Pattern[bytes] | None = None
    """An opener whose group 2 is the terminator a heredoc still open at the end waits for."""
    stand_ins: tuple[re.Pattern[bytes], ...] = ()
    """Valid constructs the grammar cannot parse, replaced by an identifier of the same length."""
    conditionals: bool = False
    """C's preprocessor conditionals: one branch of each is parsed (``policy.runtime.gates.preprocessor``)."""


_C_LIKE = (BLOCK_COMMENT_END, '"')
_FINALLY = " finally {}"
_JS_TAILS = (BLOCK_COMMENT_END, "`", '"', "'")

GRAMMARS: dict[str, Grammar] = {
    grammar.name: grammar
    for grammar in (
        Grammar("javascript", "tree_sitter_javascript", "language", _JS_TAILS, try_closer=_FINALLY),
        Grammar("typescript", "tree_sitter_typescript", "language_typescript", _JS_TAILS, try_closer=_FINALLY,
                stand_ins=(_IMPORT_TYPE,)),
        Grammar("tsx", "tree_sitter_typescript", "language_tsx", _JS_TAILS, try_closer=_FINALLY,
                stand_ins=(_IMPORT_TYPE,)),
        Grammar("go", "tree_sitter_go", "language", (*_C_LIKE, "`")),
        Grammar("rust", "tree_sitter_rust", "language", (*_C_LIKE, '"#', '"##')),
        Grammar("java", "tree_sitter_java", "language", (BLOCK_COMMENT_END, '"""', '"'), try_closer=_FINALLY),
        Grammar("c", "tree_sitter_c", "language", _C_LIKE, conditionals=True),
        Grammar("cpp", "tree_sitter_cpp", "language", (*_C_LIKE, ')"'), try_closer=" catch (...) {}",
                conditionals=True),
        Grammar(
            "ruby", "tree_sitter_ruby", "language", ('"', "'", "`", "\n=end\n"),
            keywords=frozenset({"def", "class", "module", "do", "begin", "case", "if", "unless", "while",
                                "until", "for"}),
            modifier_parents=frozenset({"if_modifier", "unless_modifier", "while_modifier", "until_modifier",
                                        "rescue_modifier", "conditional"}),
            heredoc=re.compile(rb"<<[~-]?(['\"`]?)([A-Za-z_]\w*)\1"),
        ),
        Grammar("php", "tree_sitter_php", "language_php", (*_C_LIKE, "'"), try_closer=_FINALLY,
                heredoc=re.compile(rb"<<<[ \t]*(['\"]?)([A-Za-z_]\w*)\1")),
        Grammar("shell", "tree_sitter_bash", "language", ("'", '"', "`")),
        Grammar("html", "tree_sitter_html", "language", ("-->", '"', "'", ">")),
        Grammar("css", "tree_sitter_css", "language", (BLOCK_COMMENT_END, '"', "'")),
    )
}
"""Every tree-sitter language a gate can name (``check javascript``)."""
assert tuple(GRAMMARS) == SYNTAX_TREE_LANGUAGES, "model.compiled.SYNTAX_TREE_LANGUAGES names every grammar"

_LANGUAGES: dict[str, Any] = {}
_LOCK = threading.Lock()


class GrammarUnavailable(Exception):
    """The grammar's wheel (or the ``tree-sitter`` binding) is not installed or does not load."""


def parser(name: str) -> Any:
    """A ``tree_sitter.Parser`` for the language, its grammar imported on first use.

    A parser is not thread-safe: each thread gets its own, sharing the loaded language.
    """
    parsers: dict[str, Any] | None = getattr(_THREAD, "parsers", None)
    if parsers is None:
        parsers = _THREAD.parsers = {}
    found = parsers.get(name)
    if found is None:
        language = _language(name)
        import tree_sitter

        found = parsers[name] = tree_sitter.Parser(language)
    return found


_THREAD = threading.local()


def _language(name: str) -> Any:
    with _LOCK:
        language = _LANGUAGES.get(name)
        if language is None:
            grammar = GRAMMARS[name]
            try:
                import tree_sitter

                module = importlib.import_module(grammar.module)
                language = tree_sitter.Language(getattr(module, grammar.function)())
            except (ImportError, AttributeError, ValueError, TypeError) as error:
                raise GrammarUnavailable(
                    f"the {name} grammar does not load ({error}); install policyctl's grammars: "
                    f"pip install {grammar.module.replace('_', '-')}"
                ) from error
            _LANGUAGES[name] = language
    return language
