"""The grammar itself: it builds without conflicts, and it is unambiguous on real policies."""

from __future__ import annotations

from pathlib import Path

import pytest
from lark import Lark, Tree
from lark.exceptions import GrammarError

from policy.language.parser import build_parser_uncached, parse
from policy.resources import data_dir

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted([
    *ROOT.glob("policies/*.policy"),
    *ROOT.glob("examples/**/*.policy"),
    *ROOT.glob("tests/hint_cases/*.policy"),
])


def _grammar() -> str:
    return (data_dir("grammar") / "policy.lark").read_text(encoding="utf-8")


def test_the_lalr_grammar_builds_in_strict_mode() -> None:
    assert build_parser_uncached().options.strict


def test_strict_mode_rejects_a_shift_reduce_conflict() -> None:
    """The check is live: a grammar with a dangling optional value conflicts and fails to build."""
    conflicting = _grammar().replace("statement: NAME _value* block?",
                                     "statement: NAME _value* block? _value?")
    with pytest.raises(GrammarError):
        Lark(conflicting, parser="lalr", strict=True)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_ambiguity_under_earley(path: Path) -> None:
    """Earley with explicit ambiguity finds what an LALR build resolves silently (same tokens)."""
    text = path.read_text(encoding="utf-8")
    assert parse(text, str(path))[1] == []
    earley = Lark(_grammar(), parser="earley", ambiguity="explicit", lexer="basic")
    tree = earley.parse(text)
    ambiguous = [node for node in tree.iter_subtrees() if isinstance(node, Tree) and node.data == "_ambig"]
    assert ambiguous == []


def test_the_ambiguity_check_sees_an_ambiguous_grammar() -> None:
    ambiguous_grammar = _grammar().replace("statement: NAME _value* block?",
                                           "statement: NAME _value* _value* block?")
    earley = Lark(ambiguous_grammar, parser="earley", ambiguity="explicit", lexer="basic")
    tree = earley.parse('loop repeat 3 4 { warn 3 }\n')
    assert any(node.data == "_ambig" for node in tree.iter_subtrees())
