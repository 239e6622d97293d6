"""The parser's tree builder: every node's span is taken from its tokens."""

from __future__ import annotations

from policy.language import ast
from policy.language.parser import parse

SOURCE = 'tool w {\n  writes path=p content=c\n}\ntest "t" {\n  call w { "path": ["a", {"b": 1}] }\n}\n'


def at(text: str, node: ast.Node) -> str:
    return text[node.span.start:node.span.end]


def test_spans_run_from_the_first_token_to_the_end_of_the_last_child() -> None:
    tree, diagnostics = parse(SOURCE, "t.policy")
    assert tree is not None and not diagnostics
    tool, test = tree.statements
    assert at(SOURCE, tool) == "tool w {\n  writes path=p content=c\n}"
    assert (tool.span.line, tool.span.column, tool.span.end_line, tool.span.end_column) == (1, 1, 3, 2)
    assert tool.block is not None
    assert at(SOURCE, tool.block) == "{\n  writes path=p content=c\n}"
    writes = tool.block.statements[0]
    assert at(SOURCE, writes) == "writes path=p content=c"
    assert [at(SOURCE, v) for v in writes.values] == ["path=p", "content=c"]
    assert (writes.name_span.start, writes.name_span.end) == (11, 17)
    assert test.block is not None
    call = test.block.statements[0]
    (target, arguments) = call.values
    assert at(SOURCE, arguments) == '{ "path": ["a", {"b": 1}] }'
    assert isinstance(arguments, ast.Json) and arguments.value == {"path": ["a", {"b": 1}]}
    assert at(SOURCE, target) == "w"


def test_a_statement_of_one_name() -> None:
    tree, _ = parse("  until_progress\n", "t")
    assert tree is not None
    (statement,) = tree.statements
    assert statement.span == statement.name_span
    assert (statement.span.column, statement.span.end_column) == (3, 17)
