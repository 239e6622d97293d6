"""A fast path for plain hint templates: text, ``{% if %}`` branches, ``{% set %}`` and
expressions without calls, rendered without building a Jinja2 context.

Most hints are text with ``{{ name }}`` or ``{{ a.b }}`` placeholders and a few
conditions (``{% if action == "stop" %}``).  Jinja2's render of such a template
makes a context, a generator and a budget per render; most of a short hint's
cost.  ``plan_of`` decides from the template's parsed tree (``Environment.parse``
and ``jinja2.nodes``, public API) whether every node is one this module
evaluates, and if so turns the tree into a *plan*: nested tuples of plain
values, kept with a cached policy's compiled code.  ``renderer`` compiles a
plan into one Python function of the render's variables, as Jinja2 compiles a
template, but whose code holds nothing of the template: every text, constant,
name and attribute is a value bound to the function, the code only refers to
it by position, so no template text is ever compiled as Python.

The function does what the code Jinja2 generates for the same nodes does (the
same Python operators, the environment's ``getattr`` and ``getitem``, ``str``
for every output as with ``autoescape`` off and no ``finalize``), so its text is
byte-identical (``tests/test_hint_plan.py`` holds every shipped template to
that).  Whenever it is not sure to be (a name the variables do not hold, an
attribute that is undefined, any exception, a text longer than the sandbox's
bound) it returns None and the caller renders with Jinja2, which then does
whatever it does: renders, or fails with its own error.
"""

from __future__ import annotations

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

_COMPARISONS = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in",
                "notin": "not in"}
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


def renderer(plan: Plan, environment: Environment, limit: int) -> Render:
    """The plan as one function of the variables: the text, or None when Jinja2 must render it
    (see the module docstring).  ``limit``: the longest text it returns.

    A name is read from the variables alone: one they do not hold (a global of the environment,
    a name nothing provides) is left to Jinja2."""
    writer = _Writer()
    if any(item[0] == "set" for item in _statements(plan)):
        lines = ["o = []", "v = _Locals(v)", *writer.statements(plan, ""), "t = ''.join(o)"]
    else:
        lines = [f"t = {writer.body(plan)}"]
    source = "\n".join([
        f"def make({', '.join(['_len', '_attr', '_item', '_Locals', *writer.bound])}):",
        "  def render(v):",
        "    try:",
        *(f"      {line}" for line in lines),
        "    except Exception:",  # whatever it is, Jinja2's render says it
        "      return None",
        "    return t if _len(t) <= limit else None",
        "  return render",
    ])
    namespace: dict[str, Any] = {"limit": limit}
    exec(compile(source, "<hint plan>", "exec"), namespace)
    attr, item = _lookups(environment)
    return namespace["make"](len, attr, item, _Locals, *writer.values)  # type: ignore[no-any-return]


def _statements(plan: Plan) -> list[Plan]:
    """Every item of a body, those of its branches included."""
    items: list[Plan] = []
    for item in plan:
        if type(item) is str:
            continue
        items.append(item)
        if item[0] == "if":
            for _, body in item[1]:
                items += _statements(body)
            items += _statements(item[2])
    return items


class _Locals(dict[str, Any]):
    """The names a render assigns (``{% set %}``), over the variables it was given."""

    __slots__ = ("_variables",)

    def __init__(self, variables: Mapping[str, Any]) -> None:
        super().__init__()
        self._variables = variables

    def __missing__(self, name: str) -> Any:
        return self._variables[name]


def _lookups(environment: Environment) -> tuple[Callable[[Any, str], Any], Callable[[Any, Any], Any]]:
    """``a.b`` and ``a[k]`` as the environment resolves them (the sandbox's checks included); an
    undefined result is left to Jinja2."""
    get_attr, get_item = environment.getattr, environment.getitem

    def attr(value: Any, name: str) -> Any:
        found = get_attr(value, name)
        if isinstance(found, Undefined):
            raise _Undefined(name)
        return found

    def item(value: Any, key: Any) -> Any:
        found = get_item(value, key)
        if isinstance(found, Undefined):
            raise _Undefined(str(key))
        return found

    return attr, item


class _Writer:
    """Python source for a plan; every value of the plan is bound to the function as ``_N``."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    @property
    def bound(self) -> list[str]:
        return [f"_{index}" for index in range(len(self.values))]

    def value(self, value: Any) -> str:
        self.values.append(value)
        return f"_{len(self.values) - 1}"

    def body(self, plan: Plan) -> str:
        """A body as one expression: its literal texts and the other items' texts, joined (adjacent
        texts are one)."""
        parts: list[str] = []
        text = ""
        for item in plan:
            if type(item) is str:
                text += item
                continue
            if text:
                parts.append(self.value(text))
                text = ""
            parts.append(self.item(item))
        if text or not parts:
            parts.append(self.value(text))
        if len(parts) == 1:
            return parts[0]
        return f"''.join(({', '.join(parts)}))"

    def item(self, plan: Plan) -> str:
        if plan[0] == "out":
            return f"str({self.expr(plan[1])})"
        branches, otherwise = plan[1], self.body(plan[2])
        for test, body in reversed(branches):
            otherwise = f"({self.body(body)} if {self.expr(test)} else {otherwise})"
        return otherwise

    def statements(self, plan: Plan, indent: str) -> list[str]:
        """A body as statements appending to ``o`` (a template that assigns)."""
        lines: list[str] = []
        for item in plan:
            if type(item) is str:
                lines.append(f"{indent}o.append({self.value(item)})")
            elif item[0] == "out":
                lines.append(f"{indent}o.append(str({self.expr(item[1])}))")
            elif item[0] == "set":
                lines.append(f"{indent}v[{self.value(item[1])}] = {self.expr(item[2])}")
            else:
                keyword = "if"
                for test, body in item[1]:
                    lines.append(f"{indent}{keyword} {self.expr(test)}:")
                    lines += self.statements(body, indent + "  ") or [f"{indent}  pass"]
                    keyword = "elif"
                if item[2]:
                    lines.append(f"{indent}else:")
                    lines += self.statements(item[2], indent + "  ")
        return lines

    def expr(self, plan: Plan) -> str:
        kind = plan[0]
        if kind == "name":
            return f"v[{self.value(plan[1])}]"
        if kind == "const":
            return self.value(plan[1])
        if kind == "attr":
            return f"_attr({self.expr(plan[1])}, {self.value(plan[2])})"
        if kind == "item":
            return f"_item({self.expr(plan[1])}, {self.expr(plan[2])})"
        if kind == "not":
            return f"(not {self.expr(plan[1])})"
        if kind in ("and", "or"):
            return f"({self.expr(plan[1])} {kind} {self.expr(plan[2])})"
        if kind == "cmp":
            chain = "".join(f" {_COMPARISONS[op]} {self.expr(operand)}" for op, operand in plan[2])
            return f"({self.expr(plan[1])}{chain})"
        if kind == "cond":
            return f"({self.expr(plan[2])} if {self.expr(plan[1])} else {self.expr(plan[3])})"
        items = [self.expr(item) for item in plan[1]]
        if kind == "concat":  # Jinja2's ``str_join``
            return f"''.join([{', '.join(f'str({item})' for item in items)}])"
        return f"({''.join(f'{item}, ' for item in items)})"
