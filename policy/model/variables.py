"""Hint variables: the ones every rule provides, and a mapping that computes each on first read.

The guard renders with ``HintVariables``; what each kind of rule adds is
``policy.language.hint_variables`` (the checker offers a template exactly
the common variables and its kind's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from policy.model.decision import Action, RuleRef
from policy.model.events import ToolCall
from policy.model.jsontext import readable

CALL_SUMMARY_LIMIT = 160


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
        # The common variables that cost nothing to make (``dict.__init__``, not ``super()``: one
        # object fewer per render).
        dict.__init__(self, rule_kind=rule.kind, rule_name=rule.name, action=action, tool=call.name,
                      call_id=call.id, policy=policy)
        if values:
            self.update(values)
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


def plain_variables(policy: str, rule: RuleRef, action: Action, call: ToolCall, values: Mapping[str, Any],
                    summary: str) -> dict[str, Any]:
    """``HintVariables(policy, rule, action, call, values)`` with ``call`` set to ``summary``, as one
    plain dict, for a compiled template (``HintTemplate.compiled_program``) that reads neither
    ``rule`` nor ``args`` (``MADE_ON_READ``, which it leaves out): the same value for every
    name the template reads, without the mapping's class.  A name it lacks fails the compiled
    function, and the caller renders with ``HintVariables``."""
    return {"rule_kind": rule.kind, "rule_name": rule.name, "action": action, "tool": call.name,
            "call_id": call.id, "policy": policy, **values, "call": summary}


_ON_FIRST_READ: dict[str, Callable[[RuleRef, ToolCall], Any]] = {
    "rule": lambda rule, call: str(rule),
    "args": lambda rule, call: dict(call.args),
    "call": lambda rule, call: call_summary(call),
}
"""The common variables ``HintVariables`` makes only when a template reads them."""
MADE_ON_READ = frozenset(_ON_FIRST_READ) - {"call"}
"""The common variables ``plain_variables`` leaves out (``call`` it is given)."""

COMMON_VARIABLES = frozenset(
    {*HintVariables("", RuleRef("", ""), "allow", ToolCall(id="", name="")), *_ON_FIRST_READ}
)
"""The variables every rule provides: those made at once and those made on first read."""
