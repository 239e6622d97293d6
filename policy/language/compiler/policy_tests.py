"""``test "NAME" { … }`` → PolicyTest: steps checked, ``repeat`` expanded, tools and rules resolved.

Only the tests of the file being compiled are kept: a base policy's tests
are its own (``policyctl test`` runs them on the base).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from policy.language import ast
from policy.language.checker import check_statement, split_run_on_lines
from policy.language.collector import did_you_mean, join_help, quoted_list
from policy.language.compiler.context import Context
from policy.language.leaves import BareName
from policy.language.patterns import compile_regex
from policy.language.schema import CALL_STEP, STEPS
from policy.model.compiled import PolicyTest, TestCall, TestStep
from policy.model.decision import Action
from policy.model.diagnostics import Span

MAX_TEST_STEPS = 10_000
"""A test expands (``repeat``) to at most this many steps."""


def compile_tests(ctx: Context) -> tuple[PolicyTest, ...]:
    tests = []
    for declaration in ctx.declarations("test"):
        if declaration.file != ctx.composition.root or declaration.header.block is None:
            continue
        compiler = _TestCompiler(ctx)
        steps = compiler.steps(declaration.header.block.statements)
        name_span = declaration.header.values[0].span
        if not compiler.expects and compiler.ok:
            ctx.report.add(
                "E703",
                f"test `{declaration.name}` has no `expect` step: it can never fail",
                name_span,
                "add e.g. `expect allow` or `expect block gate python` after a call",
            )
        if len(steps) > MAX_TEST_STEPS:
            ctx.report.add(
                "E703",
                f"test `{declaration.name}` expands to {len(steps)} steps (at most {MAX_TEST_STEPS})",
                name_span,
                "use smaller `repeat` counts",
            )
        elif compiler.ok:
            tests.append(PolicyTest(name=declaration.name, steps=tuple(steps), span=declaration.header.span))
    return tuple(tests)


GATE_NAMED = {"sweep": "gate", "incomplete": "gate"}
"""Rule kinds whose findings are named after the gate that checked the file."""


@dataclass
class _TestCompiler:
    ctx: Context
    ok: bool = True
    called: bool = False
    expects: bool = False

    def steps(self, statements: list[ast.Statement]) -> list[TestStep]:
        steps: list[TestStep] = []
        for statement in split_run_on_lines(statements, STEPS, self.ctx.report):
            spec = STEPS.get(statement.name)
            if spec is None:
                self.ctx.report.unknown("E102", "test step", statement.name, statement.name_span, STEPS)
                self.ok = False
            elif not check_statement(statement, spec, STEPS, self.ctx.report):
                self.ok = False
            else:
                steps.extend(self._step(statement))
            if len(steps) > MAX_TEST_STEPS:
                break
        return steps

    def _step(self, statement: ast.Statement) -> Iterator[TestStep]:
        values = statement.values
        if statement.name == "file":
            path, content = values
            assert isinstance(path, ast.String) and isinstance(content, ast.String)
            yield TestStep("file", span=statement.span, path=path.value, content=content.value)
        elif statement.name == "call":
            call = self._call(statement)
            if call is not None:
                yield TestStep("turn", span=statement.span, calls=(call,))
        elif statement.name == "turn":
            yield from self._turn(statement)
        elif statement.name == "result":
            yield from self._result(statement)
        elif statement.name == "expect":
            yield from self._expect(statement)
        else:
            yield from self._repeat(statement)

    def _call(self, statement: ast.Statement) -> TestCall | None:
        tool = statement.values[0]
        assert isinstance(tool, (ast.Name, ast.String))
        self.called = True
        args = self._args(statement)
        if not self.ctx.declared("tool", tool.value):
            declared = [name for kind, name in self.ctx.composition.declarations if kind == "tool"]
            self.ctx.report.add(
                "E701",
                f"the policy declares no tool `{tool.value}`",
                tool.span,
                join_help(
                    did_you_mean(tool.value, declared),
                    f"tools: {quoted_list(declared)}" if declared else None,
                ),
            )
            self.ok = False
            return None
        return TestCall(name=tool.value, args=args, span=statement.span) if args is not None else None

    def _args(self, statement: ast.Statement) -> dict[str, Any] | None:
        """The call's arguments: its JSON object, or ``{}``."""
        json_values = [v for v in statement.values if isinstance(v, ast.Json)]
        block = statement.block
        expected = 'expected: call TOOL { "argument": value, … } or call TOOL {}'
        if block is not None and (block.statements or json_values):
            self._fail("E103", "a call's arguments are one JSON object", block.span, expected)
            return None
        if block is not None:
            return {}
        if not json_values:
            self._fail(
                "E103", f"`call {_text(statement.values[0])}` has no arguments", statement.span, expected
            )
            return None
        value = json_values[0]
        if not isinstance(value.value, dict):
            self._fail("E103", "a call's arguments are a JSON object, not an array", value.span, expected)
            return None
        bare = next(_bare_names(value.value), None)
        if bare is not None:
            self._fail(
                "E702",
                f"`{bare}` is not a JSON value",
                bare.node.span,
                f'write a string as "{bare}"; the other bare words are true, false and null',
            )
            return None
        return value.value

    def _turn(self, statement: ast.Statement) -> Iterator[TestStep]:
        assert statement.block is not None
        calls = []
        for inner in split_run_on_lines(statement.block.statements, {"call": CALL_STEP}, self.ctx.report):
            if inner.name != "call":
                self._fail(
                    "E703",
                    f"a `turn` holds only `call` steps, not `{inner.name}`",
                    inner.name_span,
                    "put `result` and `expect` after the turn",
                )
            elif check_statement(inner, CALL_STEP, {"call": CALL_STEP}, self.ctx.report):
                call = self._call(inner)
                if call is not None:
                    calls.append(call)
            else:
                self.ok = False
        if not calls and self.ok:
            self._fail("E703", "a `turn` needs at least one `call`", statement.span)
        if calls:
            yield TestStep("turn", span=statement.span, calls=tuple(calls))

    def _result(self, statement: ast.Statement) -> Iterator[TestStep]:
        status, content = statement.values
        assert isinstance(status, ast.Name) and isinstance(content, ast.String)
        if not self.called:
            self._fail(
                "E703",
                "`result` before any call",
                statement.name_span,
                "a result belongs to the most recent call: put a `call` first",
            )
            return
        yield TestStep(
            "result",
            span=statement.span,
            content=content.value,
            status="success" if status.value == "ok" else "error",
        )

    def _expect(self, statement: ast.Statement) -> Iterator[TestStep]:
        self.expects = True
        first, *rest = statement.values
        assert isinstance(first, ast.Name)
        if rest and isinstance(rest[0], ast.Name) and rest[0].value in ("contains", "matches"):
            yield from self._expect_hint(statement, rest[0].value, rest[1])
            return
        action = cast(Action, first.value)  # one of the actions: the step's form checked it
        rule = None
        if rest:
            kind, name = rest
            assert isinstance(kind, ast.Name) and isinstance(name, (ast.Name, ast.String))
            if action == "allow":
                self._fail(
                    "E703", "`expect allow` names no rule: nothing fires", kind.span, "write `expect allow`"
                )
                return
            if not self._rule_exists(kind.value, name):
                return
            rule = f"{kind.value} {name.value}"
        yield TestStep("expect", span=statement.span, action=action, rule=rule)

    def _expect_hint(self, statement: ast.Statement, how: str, value: ast.Value) -> Iterator[TestStep]:
        if how == "contains":
            assert isinstance(value, ast.String)
            yield TestStep("expect", span=statement.span, hint_contains=value.value)
            return
        assert isinstance(value, ast.Regex)
        pattern = compile_regex(value, self.ctx.report)
        if pattern is None:
            self.ok = False
            return
        yield TestStep("expect", span=statement.span, hint_matches=pattern)

    def _rule_exists(self, kind: str, name: ast.Name | ast.String) -> bool:
        declared = GATE_NAMED.get(kind, kind)
        if self.ctx.declared(declared, name.value):
            return True
        present = [n for k, n in self.ctx.composition.declarations if k == declared]
        listing = f"{kind}s: {quoted_list(present)}" if present else f"the policy has no {kind}"
        self._fail(
            "E703",
            f"the policy has no {kind} `{name.value}`",
            name.span,
            join_help(did_you_mean(name.value, present), listing),
        )
        return False

    def _repeat(self, statement: ast.Statement) -> Iterator[TestStep]:
        count = statement.values[0]
        assert isinstance(count, ast.Number) and isinstance(count.value, int) and statement.block is not None
        if count.value < 1:
            self._fail("E703", f"`repeat {count.value}` runs nothing", count.span, "repeat at least once")
            return
        body = self.steps(statement.block.statements)
        if len(body) * count.value > MAX_TEST_STEPS:
            self._fail(
                "E703",
                f"`repeat {count.value}` expands to {len(body) * count.value} steps "
                f"(at most {MAX_TEST_STEPS})",
                count.span,
                "use a smaller count",
            )
            return
        yield from body * count.value

    def _fail(self, code: str, message: str, span: Span, help: str | None = None) -> None:
        self.ctx.report.add(code, message, span, help)
        self.ok = False


def _text(value: ast.Value) -> str:
    return value.value if isinstance(value, (ast.Name, ast.String)) else ""


def _bare_names(value: Any) -> Iterator[BareName]:
    """Bare words inside a JSON literal (``{"a": yes}``), depth first."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, BareName):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
