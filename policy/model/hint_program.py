"""Hint templates run without Jinja2: a *program* for the templates within a small subset.

A hook process that renders one hint would spend most of its time importing
Jinja2 (its package imports the lexer, parser and compiler whatever is
used).  So each template whose syntax tree
holds only text, ``{{ … }}`` output, ``if``/``elif``/``else``, ``set`` of a
name, names, constants, ``dict``/``list``/``tuple`` literals, ``.attribute``
and ``[item]``, ``and``/``or``/``not``, comparisons, ``~``, ``… if … else …``,
the tests ``none``, ``defined`` and ``undefined``, calls of a few methods of
``str`` and ``dict`` and policyctl's own filters is also turned into nested
tuples (``program_of``: the one walk of the tree, made once per template and
kept in a cached policy), and ``run`` renders it as the bounded sandbox would.

``run`` only answers where its answer is certainly Jinja2's: an undefined
value used for anything but a ``defined`` test (``StrictUndefined`` would
fail), an attribute that is not a plain key of a dict, a call or value of any
other kind, or a result past the sandbox's bounds raises ``Unsupported``, and
the template is rendered by Jinja2 instead (``tests/test_hint_program.py``
renders every shipped template each way).

A program is the one representation of a template's fast path, kept once in a
cached policy, with two executors: ``run`` here, which interprets it on plain
data alone, so that a process answering one event need not load Jinja2; and
``policy.model.hint_compiler``, which compiles it into a Python function that
reads attributes and items through the sandbox itself, the fastest render for
a process that renders a template many times.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import nodes

Program = tuple[Any, ...]
"""``("template", statements)``; each statement and expression a tuple whose first item names it."""

MAX_HINT_CHARS = 16_384
MAX_FILTER_NUMBER = MAX_HINT_CHARS
MAX_STEPS = 10_000
"""As ``policy.model.hint_sandbox``: the longest hint, the largest number a filter may be given, and
the calls (filters, methods) one render may make."""
FILTERS = frozenset({"basename", "truncate_middle", "json", "pip_name"})
"""The filters a program may call (policyctl's own: plain functions, given to ``run``)."""
_METHODS: dict[type, frozenset[str]] = {
    str: frozenset({"startswith", "endswith", "split", "strip", "lstrip", "rstrip", "lower", "upper"}),
    dict: frozenset({"get"}),
}
"""The methods a program may call, by the exact type of the object: none changes it or builds much."""
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "gt": operator.gt, "lteq": operator.le,
    "gteq": operator.ge, "in": lambda a, b: a in b, "notin": lambda a, b: a not in b,
}
_JINJA_GLOBALS = frozenset({"range", "dict", "lipsum", "cycler", "joiner", "namespace"})
"""Names Jinja2 resolves from its globals when no variable has them: a program leaves them to Jinja2."""
_SPECIAL_NAMES = frozenset({"self", "loop", "caller", "varargs", "kwargs", "super"})
"""Names Jinja2 may bind to something other than a variable: a template that uses one has no program."""
_TESTS = frozenset({"none", "defined", "undefined"})
_PLAIN = (str, int, float, bool, type(None))
_PLAIN_DEPTH = 32


class Unsupported(Exception):
    """The program cannot tell what Jinja2 would render: Jinja2 renders the template."""


class _Undefined:
    """A name nothing defines (``StrictUndefined`` in the sandbox)."""


_UNDEFINED = _Undefined()


# --- building a program (when a policy is cached; Jinja2 is imported then) ------------------


def program_of(template: nodes.Template, filters: frozenset[str]) -> Program | None:
    """The program of a template's syntax tree, which may call the ``filters`` (plain functions
    ``run`` is given); None when it uses anything outside the subset."""
    try:
        return ("template", _Builder(filters).statements(template.body))
    except Unsupported:
        return None


class _Builder:
    """Turns a syntax tree into a program (``Unsupported`` for a node outside the subset)."""

    def __init__(self, filters: frozenset[str]) -> None:
        self.filters = filters

    def statements(self, body: list[Any]) -> tuple[Any, ...]:
        return tuple(self.statement(node) for node in body)

    def statement(self, node: Any) -> Any:
        from jinja2 import nodes

        if isinstance(node, nodes.Output):
            return ("output", tuple(("text", child.data) if isinstance(child, nodes.TemplateData)
                                    else self.expression(child) for child in node.nodes))
        if isinstance(node, nodes.If):
            branches = [(node.test, node.body), *((branch.test, branch.body) for branch in node.elif_)]
            return ("if", tuple((self.expression(test), self.statements(body)) for test, body in branches),
                    self.statements(node.else_))
        if isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name) and (
                node.target.name not in _SPECIAL_NAMES):
            return ("set", node.target.name, self.expression(node.node))
        raise Unsupported(type(node).__name__)

    def expression(self, node: Any) -> Any:
        from jinja2 import nodes

        each = self.expressions
        if isinstance(node, nodes.Const) and isinstance(node.value, _PLAIN):
            return ("const", node.value)
        if isinstance(node, nodes.Name) and node.ctx == "load" and node.name not in _SPECIAL_NAMES:
            return ("name", node.name)
        if isinstance(node, nodes.Dict):
            return ("dict", tuple((self.expression(pair.key), self.expression(pair.value))
                                  for pair in node.items))
        if isinstance(node, nodes.List):
            return ("list", each(node.items))
        if isinstance(node, nodes.Tuple) and node.ctx == "load":
            return ("tuple", each(node.items))
        if isinstance(node, nodes.Getattr):
            return ("attr", self.expression(node.node), node.attr)
        if isinstance(node, nodes.Getitem) and not isinstance(node.arg, nodes.Slice):
            return ("item", self.expression(node.node), self.expression(node.arg))
        if isinstance(node, nodes.Not):
            return ("not", self.expression(node.node))
        if isinstance(node, nodes.And | nodes.Or):
            kind = "and" if isinstance(node, nodes.And) else "or"
            return (kind, self.expression(node.left), self.expression(node.right))
        if isinstance(node, nodes.Compare):
            return ("compare", self.expression(node.expr),
                    tuple((_operator(operand.op), self.expression(operand.expr)) for operand in node.ops))
        if isinstance(node, nodes.Concat):
            return ("concat", each(node.nodes))
        if isinstance(node, nodes.CondExpr):
            otherwise = self.expression(node.expr2) if node.expr2 is not None else ("undefined",)
            return ("cond", self.expression(node.test), self.expression(node.expr1), otherwise)
        if isinstance(node, nodes.Test) and node.name in _TESTS and _plain_call(node):
            return ("test", node.name, self.expression(node.node))
        if isinstance(node, nodes.Filter) and node.name in self.filters and node.node is not None and (
                _plain_call(node, args=True)):
            return ("filter", node.name, self.expression(node.node), each(node.args))
        method = isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr)
        if method and _plain_call(node, args=True):
            return ("method", self.expression(node.node.node), node.node.attr, each(node.args))
        raise Unsupported(type(node).__name__)

    def expressions(self, items: list[Any]) -> tuple[Any, ...]:
        return tuple(self.expression(item) for item in items)


def _operator(name: str) -> str:
    if name not in _COMPARE:
        raise Unsupported(name)
    return name


def _plain_call(node: Any, args: bool = False) -> bool:
    """A call with positional arguments only (none at all unless ``args``)."""
    return (args or not node.args) and not (node.kwargs or node.dyn_args or node.dyn_kwargs)


# --- running one -------------------------------------------------------------------------------


def run(program: Program, variables: Mapping[str, Any], readable: frozenset[str],
        filters: Mapping[str, Callable[..., Any]]) -> str:
    """The text Jinja2's bounded sandbox renders when given the ``readable`` names of ``variables``
    (the names the template reads; each is read only when the render reaches it); raises
    ``Unsupported`` where that is not certain."""
    parts: list[str] = []
    _Run(variables, readable, filters, parts).statements(program[1])
    text = "".join(parts)
    if len(text) > MAX_HINT_CHARS:  # the sandbox's bound: Jinja2 says so, and the hint falls back
        raise Unsupported("the hint is too long")
    return text


class _Run:
    def __init__(self, variables: Mapping[str, Any], readable: frozenset[str],
                 filters: Mapping[str, Callable[..., Any]], parts: list[str]) -> None:
        self.variables = variables
        self.readable = readable
        self.filters = filters
        self.parts = parts
        self.assigned: dict[str, Any] = {}
        self.steps = 0

    def spend(self) -> None:
        """One call, from the render's budget (past it, Jinja2's sandbox stops the render)."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unsupported("more calls than the sandbox's budget")

    def statements(self, statements: tuple[Any, ...]) -> None:
        for statement in statements:
            kind = statement[0]
            if kind == "output":
                for child in statement[1]:
                    self.parts.append(child[1] if child[0] == "text" else _text(self.value(child)))
            elif kind == "if":
                for test, body in statement[1]:
                    if _truth(self.value(test)):
                        self.statements(body)
                        break
                else:
                    self.statements(statement[2])
            else:  # set
                self.assigned[statement[1]] = self.value(statement[2])

    def value(self, expression: tuple[Any, ...]) -> Any:
        kind = expression[0]
        if kind == "const":
            return expression[1]
        if kind == "name":
            return self.name(expression[1])
        if kind == "attr":
            return _attribute(_defined(self.value(expression[1])), expression[2])
        if kind == "item":
            return _item(_defined(self.value(expression[1])), _defined(self.value(expression[2])))
        if kind == "not":
            return not _truth(self.value(expression[1]))
        if kind == "and":
            left = self.value(expression[1])
            return self.value(expression[2]) if _truth(left) else left
        if kind == "or":
            left = self.value(expression[1])
            return left if _truth(left) else self.value(expression[2])
        if kind == "compare":
            return self.compare(expression)
        if kind == "concat":
            return "".join(_text(self.value(item)) for item in expression[1])
        if kind == "cond":
            return self.value(expression[2] if _truth(self.value(expression[1])) else expression[3])
        if kind == "test":
            value = self.value(expression[2])
            if expression[1] == "none":
                return _defined(value) is None
            return (value is not _UNDEFINED) == (expression[1] == "defined")
        if kind == "filter":
            return self.filter(expression)
        if kind == "method":
            return self.method(expression)
        if kind == "dict":
            return {_hashable(_defined(self.value(key))): _defined(self.value(value))
                    for key, value in expression[1]}
        if kind in ("list", "tuple"):
            items = [_defined(self.value(item)) for item in expression[1]]
            return items if kind == "list" else tuple(items)
        return _UNDEFINED  # "undefined": a condition without an else, when false

    def name(self, name: str) -> Any:
        if name in self.assigned:
            return self.assigned[name]
        if name in self.readable:
            try:
                return self.variables[name]
            except KeyError:  # nothing provides it: undefined, unless Jinja2 has a global of that name
                pass
        if name in _JINJA_GLOBALS:
            raise Unsupported(f"the global {name}")
        return _UNDEFINED

    def compare(self, expression: tuple[Any, ...]) -> bool:
        left = _defined(self.value(expression[1]))
        for name, operand in expression[2]:
            right = _defined(self.value(operand))
            try:
                if not _COMPARE[name](left, right):
                    return False
            except TypeError as err:  # ``1 < "a"``: Jinja2 fails the same way, and falls back
                raise Unsupported(str(err)) from None
            left = right
        return True

    def filter(self, expression: tuple[Any, ...]) -> Any:
        self.spend()
        value = _defined(self.value(expression[2]))
        args = [_defined(self.value(arg)) for arg in expression[3]]
        if any(isinstance(arg, int) and abs(arg) > MAX_FILTER_NUMBER for arg in args):
            raise Unsupported("a filter argument past the sandbox's bound")
        _plain_tree(value)
        try:
            return self.filters[expression[1]](value, *args)
        except Exception as err:  # a wrong argument: Jinja2 fails the same way, and falls back
            raise Unsupported(str(err)) from None

    def method(self, expression: tuple[Any, ...]) -> Any:
        self.spend()
        owner = _defined(self.value(expression[1]))
        name = expression[2]
        if name not in _METHODS.get(type(owner), ()):
            raise Unsupported(f"the method {name}")
        args = [_defined(self.value(arg)) for arg in expression[3]]
        for arg in args:
            _plain_tree(arg)
        try:
            return getattr(owner, name)(*args)
        except Exception as err:
            raise Unsupported(str(err)) from None


def _defined(value: Any) -> Any:
    """``value``, unless it is undefined (``StrictUndefined`` fails on any use but a test)."""
    if value is _UNDEFINED:
        raise Unsupported("an undefined value")
    return value


def _truth(value: Any) -> bool:
    _plain_tree(_defined(value))
    return bool(value)


def _text(value: Any) -> str:
    _plain_tree(_defined(value))
    return str(value)


def _hashable(key: Any) -> Any:
    if not isinstance(key, _PLAIN):
        raise Unsupported("a key that is not a plain value")
    return key


def _plain_tree(value: Any, depth: int = 0) -> None:
    """Only plain data (text, numbers, lists, tuples, dicts of them, at most ``_PLAIN_DEPTH``
    deep): how any other object reads as text, as truth or to a filter is its own affair, which
    Jinja2's sandbox oversees."""
    if isinstance(value, _PLAIN):
        return
    if depth >= _PLAIN_DEPTH:
        raise Unsupported("data nested too deeply")
    if type(value) in (list, tuple):
        for item in value:
            _plain_tree(item, depth + 1)
        return
    if type(value) is dict:
        for key, item in value.items():
            _plain_tree(key, depth + 1)
            _plain_tree(item, depth + 1)
        return
    raise Unsupported(f"a {type(value).__name__}")


def _attribute(owner: Any, name: str) -> Any:
    """``owner.name`` as the sandbox reads it, for a plain dict's key that is not one of its methods."""
    if type(owner) is not dict or hasattr(owner, name):
        raise Unsupported(f"the attribute {name}")
    return owner.get(name, _UNDEFINED)


def _item(owner: Any, key: Any) -> Any:
    """``owner[key]`` for a plain dict's key or a list's, tuple's or text's index."""
    if type(owner) is dict and isinstance(key, _PLAIN) and key in owner:
        return owner[key]
    if type(owner) in (list, tuple, str) and type(key) is int and -len(owner) <= key < len(owner):
        return owner[key]
    raise Unsupported("an item")
