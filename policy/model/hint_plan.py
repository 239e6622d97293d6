"""A fast path for plain hint templates: text, ``{% if %}`` branches, ``{% set %}`` and
expressions without calls, rendered without building a Jinja2 context.

Most hints are text with ``{{ name }}`` or ``{{ a.b }}`` placeholders and a few
conditions (``{% if action == "stop" %}``).  Jinja2's render of such a template
makes a context, a generator and a budget per render; most of a short hint's
cost.  ``plan_of`` decides from the template's parsed tree (``Environment.parse``
and ``jinja2.nodes``, public API) whether every node is one this module
evaluates, and if so turns the tree into a *plan*: nested tuples of plain
values, kept with a cached policy's compiled code.  ``renderer`` turns a plan
into a function of the render's variables.

The function does what the code Jinja2 generates for the same nodes does, with
the same environment (``environment.getattr``, ``getitem``, its globals, ``str``
for every output as with ``autoescape`` off and no ``finalize``), so its text is
byte-identical (``tests/test_hint_plan.py`` holds every shipped template to
that).  Whenever it is not sure to be (a name nothing provides, an attribute
that is undefined, any exception, a text longer than the sandbox's bound) it
returns None and the caller renders with Jinja2, which then does whatever it
does: renders, or fails with its own error.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import Environment, Undefined, nodes

Plan = tuple[Any, ...]
"""A template body: a tuple of items, each a literal text, ``("out", expr)``,
``("set", name, expr)`` or ``("if", ((test, body), ...), else_body)``; an expression is
``("name", n)``, ``("const", v)``, ``("attr", e, a)``, ``("item", e, k)``, ``("not", e)``,
``("and", a, b)``, ``("or", a, b)``, ``("cmp", e, ((op, e), ...))``, ``("cond", test, then,
else)``, ``("concat", (e, ...))`` or ``("tuple", (e, ...))``."""

Render = Callable[[Mapping[str, Any]], "str | None"]

_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "gteq": operator.ge,
    "lt": operator.lt, "lteq": operator.le,
    "in": lambda a, b: a in b, "notin": lambda a, b: a not in b,
}
"""Jinja2's comparison operators, as the Python operators its generated code writes."""

_CONSTANTS = (str, int, float, bool, type(None))
_SPECIAL_NAMES = frozenset({"self", "loop", "caller", "varargs", "kwargs", "super"})
"""Names Jinja2 may bind to something other than a variable."""


class _NotPlain(Exception):
    """The tree has a node the plan does not cover."""


class _Undefined(Exception):
    """A value Jinja2 would make an ``Undefined`` of: Jinja2 renders this one."""


def plan_of(tree: nodes.Template, environment: Environment) -> Plan | None:
    """The plan of a parsed template, or None when it has any node this module does not evaluate
    or the environment escapes or finalizes output."""
    if environment.autoescape is not False or environment.finalize is not None or environment.is_async:
        return None
    try:
        return _Planner(environment).body(tree.body)
    except _NotPlain:
        return None


class _Planner:
    def __init__(self, environment: Environment) -> None:
        # A sandbox may intercept operators (``SandboxedEnvironment.intercepted_binops``): those
        # are left to Jinja2.
        intercepted: frozenset[str] = getattr(environment, "intercepted_binops", frozenset())
        self.binary = {op for op in ("and", "or") if op not in intercepted}
        self.unary = "not" not in getattr(environment, "intercepted_unops", frozenset())

    def body(self, statements: list[nodes.Node]) -> Plan:
        items: list[Any] = []
        for node in statements:
            if isinstance(node, nodes.Output):
                for child in node.nodes:
                    if isinstance(child, nodes.TemplateData):
                        items.append(child.data)
                    else:
                        items.append(("out", self.expr(child)))
            elif isinstance(node, nodes.If):
                branches = [(self.expr(node.test), self.body(node.body))]
                branches += [(self.expr(branch.test), self.body(branch.body)) for branch in node.elif_]
                items.append(("if", tuple(branches), self.body(node.else_)))
            elif (isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name)
                  and node.target.name not in _SPECIAL_NAMES):
                items.append(("set", node.target.name, self.expr(node.node)))
            else:
                raise _NotPlain
        return tuple(items)

    def expr(self, node: nodes.Node) -> Plan:
        if isinstance(node, nodes.Name) and node.ctx == "load" and node.name not in _SPECIAL_NAMES:
            return ("name", node.name)
        if isinstance(node, nodes.Const) and type(node.value) in _CONSTANTS:
            return ("const", node.value)
        if isinstance(node, nodes.Getattr) and node.ctx == "load":
            return ("attr", self.expr(node.node), node.attr)
        if isinstance(node, nodes.Getitem) and node.ctx == "load" and not isinstance(node.arg, nodes.Slice):
            return ("item", self.expr(node.node), self.expr(node.arg))
        if isinstance(node, nodes.Not) and self.unary:
            return ("not", self.expr(node.node))
        if isinstance(node, nodes.And | nodes.Or) and node.operator in self.binary:
            return (node.operator, self.expr(node.left), self.expr(node.right))
        if isinstance(node, nodes.Compare) and all(op.op in _COMPARISONS for op in node.ops):
            return ("cmp", self.expr(node.expr), tuple((op.op, self.expr(op.expr)) for op in node.ops))
        if isinstance(node, nodes.CondExpr) and node.expr2 is not None:
            return ("cond", self.expr(node.test), self.expr(node.expr1), self.expr(node.expr2))
        if isinstance(node, nodes.Concat):
            return ("concat", tuple(self.expr(item) for item in node.nodes))
        if isinstance(node, nodes.Tuple) and node.ctx == "load":
            return ("tuple", tuple(self.expr(item) for item in node.items))
        raise _NotPlain


Value = Callable[[Mapping[str, Any]], Any]
"""An expression or a body, compiled: a function of the render's variables (a body's result
is its text)."""


def renderer(plan: Plan, environment: Environment, limit: int) -> Render:
    """The plan as a function of the variables: the text, or None when Jinja2 must render it
    (see the module docstring).  ``limit``: the longest text it returns.

    A name is read from the variables alone: one they do not hold (a global of the environment,
    a name nothing provides) is left to Jinja2."""
    compiler = _Compiler(environment, Undefined)
    body = compiler.body(plan)
    assigns = compiler.assigns

    def render(variables: Mapping[str, Any]) -> str | None:
        try:
            text = body(_Locals(variables) if assigns else variables)
        except Exception:  # whatever it is, Jinja2's render says it
            return None
        return text if len(text) <= limit else None

    return render


class _Locals(dict[str, Any]):
    """The names a render assigns (``{% set %}``), over the variables it was given."""

    __slots__ = ("_variables",)

    def __init__(self, variables: Mapping[str, Any]) -> None:
        super().__init__()
        self._variables = variables

    def __missing__(self, name: str) -> Any:
        return self._variables[name]


class _Compiler:
    def __init__(self, environment: Environment, undefined: type) -> None:
        self.environment = environment
        self.undefined = undefined
        self.assigns = False

    def body(self, plan: Plan) -> Value:
        """A body's text: its literal text and a ``{}`` per other item, formatted (in C) with
        the items' texts."""
        literal = "".join(item.replace("{", "{{").replace("}", "}}") if type(item) is str else "{}"
                          for item in plan)
        parts = tuple(self.item(item) for item in plan if type(item) is not str)
        if not parts:
            text = literal.format()
            return lambda variables: text
        if len(parts) == 1 and literal == "{}":
            return parts[0]
        fill = literal.format
        if len(parts) == 1:
            part = parts[0]
            return lambda variables: fill(part(variables))
        return lambda variables: fill(*[part(variables) for part in parts])

    def item(self, plan: Plan) -> Value:
        kind = plan[0]
        if kind == "out":
            if plan[1][0] == "name":  # the common placeholder, in one step
                name = plan[1][1]
                return lambda variables: str(variables[name])
            value = self.expr(plan[1])
            return lambda variables: str(value(variables))
        if kind == "set":
            self.assigns = True
            name, value = plan[1], self.expr(plan[2])

            def assign(variables: Mapping[str, Any]) -> str:
                variables[name] = value(variables)  # type: ignore[index]  # a _Locals
                return ""

            return assign
        branches = tuple((self.expr(test), self.body(body)) for test, body in plan[1])
        otherwise = self.body(plan[2])
        if len(branches) == 1:
            test, then = branches[0]
            return lambda variables: then(variables) if test(variables) else otherwise(variables)

        def branch(variables: Mapping[str, Any]) -> str:
            for test, body in branches:
                if test(variables):
                    return body(variables)  # type: ignore[no-any-return]
            return otherwise(variables)  # type: ignore[no-any-return]

        return branch

    def expr(self, plan: Plan) -> Value:
        kind = plan[0]
        if kind == "name":
            name = plan[1]
            return lambda variables: variables[name]
        if kind == "const":
            constant = plan[1]
            return lambda variables: constant
        if kind in ("attr", "item"):
            return self.lookup(kind, self.expr(plan[1]), plan[2])
        if kind == "not":
            operand = self.expr(plan[1])
            return lambda variables: not operand(variables)
        if kind == "and":
            left, right = self.expr(plan[1]), self.expr(plan[2])
            return lambda variables: left(variables) and right(variables)
        if kind == "or":
            left, right = self.expr(plan[1]), self.expr(plan[2])
            return lambda variables: left(variables) or right(variables)
        if kind == "cmp":
            return self.comparison(plan[1], plan[2])
        if kind == "cond":
            test, then, otherwise = self.expr(plan[1]), self.expr(plan[2]), self.expr(plan[3])
            return lambda variables: then(variables) if test(variables) else otherwise(variables)
        items = tuple(self.expr(item) for item in plan[1])
        if kind == "concat":  # Jinja2's ``str_join``
            return lambda variables: "".join([str(item(variables)) for item in items])
        return lambda variables: tuple([item(variables) for item in items])

    def lookup(self, kind: str, target: Value, key: Any) -> Value:
        """``a.b`` or ``a[k]`` as the environment resolves them (the sandbox's checks included)."""
        undefined = self.undefined
        if kind == "attr":
            get, attribute = self.environment.getattr, key

            def attr(variables: Mapping[str, Any]) -> Any:
                value = get(target(variables), attribute)
                if isinstance(value, undefined):
                    raise _Undefined(attribute)
                return value

            return attr
        get_item, index = self.environment.getitem, self.expr(key)

        def item(variables: Mapping[str, Any]) -> Any:
            value = get_item(target(variables), index(variables))
            if isinstance(value, undefined):
                raise _Undefined(str(key))
            return value

        return item

    def comparison(self, first: Plan, rest: tuple[tuple[str, Plan], ...]) -> Value:
        """A chain of comparisons, as Python evaluates ``a < b < c``; ``name == "const"`` in one step."""
        if len(rest) == 1:
            op, second = rest[0]
            compare = _COMPARISONS[op]
            if first[0] == "name" and second[0] == "const":
                name, constant = first[1], second[1]
                return lambda variables: compare(variables[name], constant)
            left, right = self.expr(first), self.expr(second)
            return lambda variables: compare(left(variables), right(variables))
        head = self.expr(first)
        chain = tuple((_COMPARISONS[op], self.expr(operand)) for op, operand in rest)

        def chained(variables: Mapping[str, Any]) -> Any:
            left = head(variables)
            result: Any = True
            for compare, operand in chain:
                right = operand(variables)
                result = compare(left, right)
                if not result:
                    return result
                left = right
            return result

        return chained
