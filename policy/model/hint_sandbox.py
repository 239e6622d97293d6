"""The bounded, immutable Jinja2 sandbox hint templates run in.

A template is policy text, and a policy may come from a pull request, so
rendering is bounded like everything else the guard runs:

- nothing a template is given can be changed (``ImmutableSandboxedEnvironment``:
  no ``append``, ``update``, ``pop`` … on the harness's own arguments);
- every call (a macro, a filter, a method), every item a ``range`` yields and
  every pass of a ``for`` loop spends one unit of a per-render budget
  (``MAX_STEPS``); one ``range`` holds at most ``MAX_RANGE`` items; a
  ``recursive`` loop is refused when the template compiles;
- ``*`` and ``**`` refuse results larger than ``MAX_TEXT`` characters or
  ``MAX_INT_BITS`` bits, at render time and when the compiler folds constants
  (so a constant such as ``(9**9)**(9**9)`` cannot hang ``policyctl lint``);
- a rendered hint is at most ``MAX_HINT_CHARS`` characters.

Past any bound the render stops with :class:`HintBoundExceeded`; the caller
falls back to the rule's plain text and says so.
"""

from __future__ import annotations

import contextvars
import functools
import operator
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any

from jinja2 import Template, nodes, pass_context
from jinja2.exceptions import TemplateSyntaxError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_HINT_CHARS = 16_384
MAX_TEXT = MAX_HINT_CHARS
MAX_RANGE = 1_000
MAX_STEPS = 10_000
MAX_INT_BITS = 4096


class HintBoundExceeded(RuntimeError):
    """A template went past one of the sandbox's bounds; the message names it."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_STEPS

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise HintBoundExceeded(f"the template took more than {MAX_STEPS} steps")


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("hint_budget", default=None)


def _spend(steps: int) -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget.spend(steps)


def bounded_range(*args: int) -> range:
    """``range`` for templates: at most ``MAX_RANGE`` items, each spent from the render's budget."""
    items = range(*args)
    if len(items) > MAX_RANGE:
        raise HintBoundExceeded(f"range of {len(items)} items, more than {MAX_RANGE}")
    _spend(len(items))
    return items


LOOP_FILTER = "policy_each_item"
"""The filter every ``for`` loop's items pass through (a filter, so no template can shadow it)."""


@pass_context  # context-taking: the compiler never calls it while folding constants
def each_item(_context: Context, items: Iterable[Any]) -> Iterator[Any]:
    """A loop's items, each spent from the render's budget."""
    for item in items:
        _spend(1)
        yield item


def bounded_loops(template: nodes.Template) -> nodes.Template:
    """Route every ``for`` loop's items through ``LOOP_FILTER``; refuse ``recursive`` loops,
    whose inner passes the filter would not see."""
    for loop in template.find_all(nodes.For):
        if loop.recursive:
            raise TemplateSyntaxError("recursive loops are not allowed in hint templates", loop.lineno)
        loop.iter = nodes.Filter(loop.iter, LOOP_FILTER, [], [], None, None, lineno=loop.lineno)
    return template


def _size_of_product(left: Any, right: Any) -> None:
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, str | list | tuple) and isinstance(count, int):
            if len(sequence) * max(count, 0) > MAX_TEXT:
                raise HintBoundExceeded(f"a repeated text or list of more than {MAX_TEXT} items")
            return
    both_ints = isinstance(left, int) and isinstance(right, int)
    if both_ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
        raise HintBoundExceeded(f"a product of more than {MAX_INT_BITS} bits")


def _size_of_power(base: Any, exponent: Any) -> None:
    growing = isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1 and exponent > 0
    if growing and (exponent > MAX_INT_BITS or abs(base).bit_length() * exponent > MAX_INT_BITS):
        raise HintBoundExceeded(f"a power of more than {MAX_INT_BITS} bits")


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox with the bounds above (see the module docstring)."""

    intercepted_binops = frozenset({"*", "**"})

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """One flat dict per template: Jinja2's default ``ChainMap`` is merged into every render's
        context, which made that merge most of the cost of a short hint (bench_loops, warn path).
        The environment's globals are complete before any template is compiled."""
        return {**self.globals, **(d or {})}

    def render_bounded(self, template: Template, context: dict[str, Any]) -> str:
        """``template`` rendered with ``context`` (plus the globals) within the bounds."""
        return bounded_concat(template.generate(context))

    def call_binop(self, context: Context, operator_name: str, left: Any, right: Any) -> Any:
        if operator_name == "**":
            _size_of_power(left, right)
            return operator.pow(left, right)
        if operator_name == "*":
            _size_of_product(left, right)
            return operator.mul(left, right)
        return super().call_binop(context, operator_name, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _spend(1)
        return super().call(__context, __obj, *args, **kwargs)


def bounded_filter(function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that spends a step and refuses a width or count larger than ``MAX_TEXT``
    (``center(10**9)``, ``indent(10**9)`` would build the text before any other bound could see it)."""

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _spend(1)
        for value in (*args[1:], *kwargs.values()):
            if isinstance(value, int) and abs(value) > MAX_TEXT:
                raise HintBoundExceeded(f"a filter argument of {value}, more than {MAX_TEXT}")
        return function(*args, **kwargs)

    return bounded


def bounded_concat(chunks: Iterable[str]) -> str:
    """The rendered text, within the render's budget and at most ``MAX_HINT_CHARS`` characters."""
    token = _BUDGET.set(_Budget())
    try:
        parts: list[str] = []
        size = 0
        iterator: Iterator[str] = iter(chunks)
        for chunk in iterator:
            size += len(chunk)
            if size > MAX_HINT_CHARS:
                raise HintBoundExceeded(f"the hint is longer than {MAX_HINT_CHARS} characters")
            parts.append(chunk)
        return "".join(parts)
    finally:
        _BUDGET.reset(token)
