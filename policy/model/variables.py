"""Hint variables: the ones every rule provides, and a mapping that computes each on first read.

The guard renders with ``HintVariables``; what each kind of rule adds is
``policy.language.hint_variables`` (the checker offers a template exactly
the common variables and its kind's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from policy.model.decision import Action, RuleRef
from policy.model.events import ToolCall
from policy.model.jsontext import readable

CALL_SUMMARY_LIMIT = 160
_NO_VALUES: Mapping[str, Any] = MappingProxyType({})


def call_summary(call: ToolCall, limit: int = CALL_SUMMARY_LIMIT) -> str:
    """A short, readable ``tool {"arg": …}`` form of a call."""
    try:
        args = readable(call.args)
    except (TypeError, ValueError, RecursionError):
        args = str(call.args)
    text = f"{call.name} {args}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class HintVariables(dict[str, Any]):
    """The variables of one hint: ``COMMON_VARIABLES`` for one rule firing on
    one call, plus the rule's own ``values``, which win over the common ones.

    The common variables that cost something to make (``rule``, ``args``, ``call``)
    and the ``lazy`` ones (a function each) are computed when first read and then
    kept, so a template pays only for the variables it shows.  ``in`` and ``get``
    see every variable; iterating shows those made so far.
    """

    __slots__ = ("_call", "_lazy", "_rule")

    def __init__(
        self,
        policy: str,
        rule: RuleRef,
        action: Action,
        call: ToolCall,
        values: Mapping[str, Any] | None = None,
        lazy: Mapping[str, Callable[[], Any]] | None = None,
    ) -> None:
        # ``dict.__init__``, not ``super()``: no object made for it
        dict.__init__(self, common_variables(policy, rule, action, call, values or _NO_VALUES))
        self._rule = rule
        self._call = call
        self._lazy = lazy or {}

    def __missing__(self, name: str) -> Any:
        compute = self._lazy.get(name)
        if compute is not None:
            value = compute()
        elif name in _ON_FIRST_READ:
            value = _ON_FIRST_READ[name](self._rule, self._call)
        else:
            raise KeyError(name)
        self[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self._lazy or name in _ON_FIRST_READ

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


def common_variables(policy: str, rule: RuleRef, action: Action, call: ToolCall,
                     values: Mapping[str, Any] = _NO_VALUES) -> dict[str, Any]:
    """The common variables that cost nothing to make, then ``values`` (which win), as a new plain
    dict: what ``HintVariables`` starts from, and what a compiled template
    (``HintTemplate.compiled_program``) that reads none of ``MADE_ON_READ`` renders from once the
    rule's values and ``call`` are in ``values``."""
    return {"rule_kind": rule.kind, "rule_name": rule.name, "action": action, "tool": call.name,
            "call_id": call.id, "policy": policy, **values}


_ON_FIRST_READ: dict[str, Callable[[RuleRef, ToolCall], Any]] = {
    "rule": lambda rule, call: str(rule),
    "args": lambda rule, call: dict(call.args),
    "call": lambda rule, call: call_summary(call),
}
"""The common variables ``HintVariables`` makes only when a template reads them."""
MADE_ON_READ = frozenset(_ON_FIRST_READ) - {"call"}
"""The common variables ``common_variables`` does not make and a caller cannot cheaply add (``call``,
a call's summary, it can)."""

COMMON_VARIABLES = frozenset({*common_variables("", RuleRef("", ""), "allow", ToolCall(id="", name="")),
                              *_ON_FIRST_READ})
"""The variables every rule provides: those made at once and those made on first read."""
