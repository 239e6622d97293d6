"""The second executor of a hint program (``policy.model.hint_program``): the program compiled
into one Python function of the render's variables, for a process that renders many hints.

``run`` interprets a program on plain data without Jinja2; ``compiled`` turns
the same program, once, into a function as Jinja2 compiles a template, but
whose code holds nothing of the template: every text, constant, name and
attribute is a value bound to the function, the code only refers to it by
position, so no template text is ever compiled as Python.  It compiles the
part of the subset that needs nothing but Python's operators and the
sandbox's lookups (text, ``if``, ``set``, names, constants, tuples,
``.attribute``, ``[item]``, ``and``/``or``/``not``, comparisons, ``~`` and
``… if … else …``); for a program with anything else (a filter, a test, a
method, a list or dict literal, an inline ``if`` without ``else``) it declines,
and the interpreter or Jinja2 renders.

The function does what the code Jinja2 generates for the same nodes does (the
same Python operators, the environment's ``getattr`` and ``getitem``, ``str``
for every output as with ``autoescape`` off and no ``finalize``), so its text is
byte-identical (``tests/test_hint_program.py`` holds every shipped template to
that).  Whenever it is not sure to be (a name the variables do not hold, an
attribute that is undefined, any exception, a text longer than the sandbox's
bound) it returns None and the caller renders with Jinja2, which then does
whatever it does: renders, or fails with its own error.  Each variable is read
when the render reaches it, as the interpreter reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jinja2 import Environment, Undefined

from policy.model.hint_program import Program

Render = Callable[[Mapping[str, Any]], "str | None"]

_COMPARISONS = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in",
                "notin": "not in"}
"""Jinja2's comparison operators, as the Python operators its generated code writes."""


class _Declined(Exception):
    """The program has a node this module does not compile."""


class _Undefined(Exception):
    """A value Jinja2 would make an ``Undefined`` of: Jinja2 renders this one."""


def compiled(program: Program, environment: Environment, limit: int) -> Render | None:
    """The program as one function of the variables: the text, or None when Jinja2 must render it
    (see the module docstring); None when this module does not compile the program, or the
    environment escapes, finalizes or intercepts an operator the program uses.  ``limit``: the
    longest text the function returns.

    A name is read from the variables alone: one they do not hold (a global of the environment,
    a name nothing provides) is left to Jinja2."""
    if environment.autoescape is not False or environment.finalize is not None or environment.is_async:
        return None
    try:
        source, values = _source(program[1], environment)
    except _Declined:
        return None
    namespace: dict[str, Any] = {"limit": limit}
    exec(compile(source, "<hint program>", "exec"), namespace)
    attr, item = _lookups(environment)
    return namespace["make"](len, attr, item, _Locals, *values)  # type: ignore[no-any-return]


_OPERATOR_NAMES = {"not": "not "}
"""A program's operator → the name Jinja2 intercepts it by, where they differ."""


def _source(statements: tuple[Any, ...], environment: Environment) -> tuple[str, list[Any]]:
    """The Python source of a program's function, and the values bound to it."""
    # A sandbox may intercept operators (``SandboxedEnvironment.intercepted_binops``): those are
    # left to Jinja2.
    intercepted = {*getattr(environment, "intercepted_binops", ()),
                   *getattr(environment, "intercepted_unops", ())}
    writer = _Writer(intercepted)
    if any(statement[0] == "set" for statement in _statements(statements)):
        lines = ["o = []", "v = _Locals(v)", *writer.statements(statements, ""), "t = ''.join(o)"]
    else:
        lines = [f"t = {writer.body(statements)}"]
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
    return source, writer.values


def _statements(statements: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Every statement of a body, those of its branches included."""
    for statement in statements:
        yield statement
        if statement[0] == "if":
            for _, body in statement[1]:
                yield from _statements(body)
            yield from _statements(statement[2])


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
    """Python source for a program; every value of the program is bound to the function as ``_N``."""

    def __init__(self, intercepted: set[str]) -> None:
        self.values: list[Any] = []
        self.intercepted = intercepted

    @property
    def bound(self) -> list[str]:
        return [f"_{index}" for index in range(len(self.values))]

    def value(self, value: Any) -> str:
        self.values.append(value)
        return f"_{len(self.values) - 1}"

    def body(self, statements: tuple[Any, ...]) -> str:
        """A body as one expression: its texts and its other parts' texts, joined (adjacent texts
        are one)."""
        parts: list[str] = []
        text = ""
        for part in _parts(statements):
            if part[0] == "text":
                text += part[1]
                continue
            if text:
                parts.append(self.value(text))
                text = ""
            parts.append(self.branches(part) if part[0] == "if" else f"str({self.expr(part)})")
        if text or not parts:
            parts.append(self.value(text))
        if len(parts) == 1:
            return parts[0]
        return f"''.join(({', '.join(parts)}))"

    def branches(self, statement: tuple[Any, ...]) -> str:
        otherwise = self.body(statement[2])
        for test, body in reversed(statement[1]):
            otherwise = f"({self.body(body)} if {self.expr(test)} else {otherwise})"
        return otherwise

    def statements(self, statements: tuple[Any, ...], indent: str) -> list[str]:
        """A body as statements appending to ``o`` (a template that assigns)."""
        lines: list[str] = []
        for part in _parts(statements):
            if part[0] == "text":
                lines.append(f"{indent}o.append({self.value(part[1])})")
            elif part[0] == "set":
                lines.append(f"{indent}v[{self.value(part[1])}] = {self.expr(part[2])}")
            elif part[0] == "if":
                keyword = "if"
                for test, body in part[1]:
                    lines.append(f"{indent}{keyword} {self.expr(test)}:")
                    lines += self.statements(body, indent + "  ") or [f"{indent}  pass"]
                    keyword = "elif"
                if part[2]:
                    lines.append(f"{indent}else:")
                    lines += self.statements(part[2], indent + "  ")
            else:
                lines.append(f"{indent}o.append(str({self.expr(part)}))")
        return lines

    def expr(self, expression: tuple[Any, ...]) -> str:
        kind = expression[0]
        if kind == "name":
            return f"v[{self.value(expression[1])}]"
        if kind == "const":
            return self.value(expression[1])
        if kind == "attr":
            return f"_attr({self.expr(expression[1])}, {self.value(expression[2])})"
        if kind == "item":
            return f"_item({self.expr(expression[1])}, {self.expr(expression[2])})"
        if _OPERATOR_NAMES.get(kind, kind) in self.intercepted:
            raise _Declined(kind)
        if kind == "not":
            return f"(not {self.expr(expression[1])})"
        if kind in ("and", "or"):
            return f"({self.expr(expression[1])} {kind} {self.expr(expression[2])})"
        if kind == "compare":
            chain = "".join(f" {_COMPARISONS[op]} {self.expr(operand)}" for op, operand in expression[2])
            return f"({self.expr(expression[1])}{chain})"
        if kind == "cond" and expression[3][0] != "undefined":
            test, then, otherwise = (self.expr(part) for part in expression[1:])
            return f"({then} if {test} else {otherwise})"
        if kind == "concat":  # Jinja2's ``str_join``
            return f"''.join([{', '.join(f'str({self.expr(item)})' for item in expression[1])}])"
        if kind == "tuple":
            return f"({''.join(f'{self.expr(item)}, ' for item in expression[1])})"
        raise _Declined(kind)


def _parts(statements: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """A body's statements, each output statement as its parts (``("text", t)`` or an expression)."""
    for statement in statements:
        if statement[0] == "output":
            yield from statement[1]
        else:
            yield statement
